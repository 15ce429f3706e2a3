"""The curator service: analysts query protected data over HTTP; the data and the budget stay on the server."""
