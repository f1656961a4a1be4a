"""``--token-auth-file``: static bearer tokens, kube-apiserver's ``tokenfile`` authenticator.

The file is CSV, one token a line: ``token,user,uid[,"group1,group2"]`` (at least three columns; the fourth, if
any, a comma-separated group list, so quoted). It is read once at start-up, as kube-apiserver reads it: a line with
fewer than three columns fails the start with kube's message; an empty token is skipped (kube warns); a token
listed twice keeps its last line.
"""

from __future__ import annotations

import csv
import logging
from pathlib import Path

from apiserver.authentication import UserInfo

__all__ = ["TokenFile", "TokenFileError"]

log = logging.getLogger(__name__)


class TokenFileError(ValueError):
    """The token file cannot be used (unreadable, or a line with fewer than three columns)."""


class TokenFile:
    """A ``TokenAuthenticator`` over the tokens of one CSV file."""

    def __init__(self, tokens: dict[str, UserInfo]) -> None:
        self._tokens = tokens

    @classmethod
    def load(cls, path: str | Path) -> TokenFile:
        try:
            text = Path(path).read_text()
        except OSError as err:
            raise TokenFileError(f"cannot read token file '{path}': {err.strerror}") from None
        tokens: dict[str, UserInfo] = {}
        number = 0
        for record in csv.reader(text.splitlines(), skipinitialspace=True):
            if not record:
                continue  # Go's csv reader skips empty lines
            if len(record) < 3:
                raise TokenFileError(f"token file '{path}' must have at least 3 columns (token, user name, user uid), "
                                     f"found {len(record)}")
            number += 1
            if not record[0]:
                log.warning("empty token has been found in token file '%s', record number '%d'", path, number)
                continue
            if record[0] in tokens:
                log.warning("duplicate token has been found in token file '%s', record number '%d'", path, number)
            groups = tuple(record[3].split(",")) if len(record) >= 4 else ()
            tokens[record[0]] = UserInfo(record[1], groups, record[2])
        return cls(tokens)

    async def authenticate_token(self, token: str) -> UserInfo | None:
        return self._tokens.get(token)
