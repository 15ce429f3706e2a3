"""The curator service: the ``.dp`` API over HTTP, so that the analyst never holds the data (docs/server.md)."""
