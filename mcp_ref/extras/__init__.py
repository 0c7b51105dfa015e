"""The extras, each plugged into the roles through a declared seam: policy and rate limits,
tasks, file roots, the client's approval of server requests.  Loaded only when used."""
