"""What the broker knows about who is who and who may do what.

``Security`` holds the SCRAM credential store, the ACL store, the delegation token store
(token_store.py; its expired tokens are swept on each refresh) and — when ``[auth]
authorizer = true`` — the current ``Authorizer`` over those ACLs. Both stores are files in
the data dir shared by every node (and by `kgroup users add --data-dir`); ``refresh`` (polled
by the server) picks up changes made elsewhere, and a change made here takes effect for the
next request. ``sasl_session`` starts the authentication of one connection on a SASL
listener with fresh nonces from ``secrets``.
"""

from __future__ import annotations

import logging
import secrets
import time

from kgroup.broker.security.acl_store import AclStore
from kgroup.broker.config import AuthConfig, ListenerConfig
from kgroup.broker.security.credential_store import CredentialStore
from kgroup.broker.security.token_store import TokenStore
from kgroup.core.acls import Authorizer
from kgroup.wire.sasl import SaslSession

log = logging.getLogger("kgroup.broker.security")


class Security:
    """Credentials, ACLs and the authorizer (see the module comment)."""

    def __init__(self, auth: AuthConfig, data_dir: str) -> None:
        self.auth = auth
        self.credentials = CredentialStore(data_dir)
        self.acl_store = AclStore(data_dir)
        self.tokens = TokenStore(data_dir, auth.delegation_token_secret_key, auth.delegation_token_max_lifetime_ms,
                                 auth.delegation_token_expiry_time_ms)
        self.authorizer: Authorizer | None = None
        if auth.authorizer:
            self.authorizer = Authorizer(self.acl_store.acls, auth.super_users, auth.allow_everyone_if_no_acl)
        # Keys the made-up salts SCRAM shows for unknown users (kgroup.wire.scram).
        self._secret = secrets.token_bytes(32)

    def refresh(self) -> None:
        """Pick up credentials and ACLs another process changed."""
        if self.credentials.refresh():
            log.info("SCRAM credentials changed on disk: %d users", len(self.credentials.users))
        if self.acl_store.refresh():
            log.info("ACLs changed on disk: %d bindings", len(self.acl_store.acls))
            self.acls_changed()
        if self.tokens.refresh():
            log.info("delegation tokens changed on disk: %d tokens", len(self.tokens.tokens))
        for token in self.tokens.sweep(int(time.time() * 1000)):
            log.info("delegation token %s of %s expired: removed", token.token_id, token.owner)

    def acls_changed(self) -> None:
        """The ACL store changed: decide with the new ACLs from the next request on."""
        if self.authorizer is not None:
            self.authorizer = self.authorizer.with_acls(self.acl_store.acls)

    def sasl_session(self, listener: ListenerConfig) -> SaslSession:
        return SaslSession(listener.sasl_mechanisms, self.credentials, nonce=lambda: secrets.token_urlsafe(24),
                           secret=self._secret, reauth_ms=self.auth.connections_max_reauth_ms,
                           tokens=self.tokens if self.tokens.enabled else None)
