"""The credential checks behind ``apiserver.authentication.RequestAuthenticator``, one module per kind of token."""
