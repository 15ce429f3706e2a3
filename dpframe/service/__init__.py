"""The curator service: a server that holds the data and answers analysts' plans over HTTP (docs/server.md)."""
