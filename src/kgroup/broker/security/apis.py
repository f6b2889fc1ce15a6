"""The security APIs: SASL (KIP-43, KIP-152, KIP-368), ACLs and SCRAM credentials (KIP-554).

One entry each (broker/apis.py says what an entry holds). SaslHandshake and SaslAuthenticate
are open to every connection: on a SASL listener the connection's SASL session answers them
before any handler (authentication.py); elsewhere their handler says the listener does not
use SASL. Version notes: SaslHandshake 0–1, as Kafka 4.x still advertises it (KAFKA-18270):
librdkafka before that fix (Debian's kcat 1.7.1, older confluent-kafka and node-rdkafka)
refuses a range without v0. After v0 (Kafka 0.10) the SASL tokens follow in bare frames with
no request header, served as Kafka serves them (wire/sasl.py, `RequestPath.handle_secured`);
after v1 in SaslAuthenticate, whose v1 adds KIP-368's session lifetime. The ACL APIs from v1
(v0 predates prefixed patterns, KIP-290); the SCRAM credential APIs have only v0. The
delegation token APIs (KIP-48) at Kafka 4.4's versions (v0 removed in 4.0; Create and
Describe v3 add KIP-373's owner and requester); their ACL checks come after the connection's
(token_api.py), so their guards admit.
"""

from __future__ import annotations

from kgroup.broker.apis import Api
from kgroup.broker.security import guards
from kgroup.broker.apis import Takes
from kgroup.broker.security.security_api import SecurityApi
from kgroup.broker.security.token_api import TokenApi
from kgroup.wire.api_keys import ApiKey as K

APIS = (
    Api(K.SASL_HANDSHAKE, 0, 1, SecurityApi.sasl_outside_sasl, guard=None, edits=False),
    Api(K.SASL_AUTHENTICATE, 0, 2, SecurityApi.sasl_outside_sasl, guard=None, edits=False),
    Api(K.DESCRIBE_ACLS, 1, 3, SecurityApi.describe_acls, guards.describe_acls, edits=False),
    Api(K.CREATE_ACLS, 1, 3, SecurityApi.create_acls, guards.create_acls, edits=True),
    Api(K.DELETE_ACLS, 1, 3, SecurityApi.delete_acls, guards.delete_acls, edits=True),
    Api(K.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, 0, SecurityApi.describe_user_scram_credentials,
        guards.describe_user_scram_credentials, edits=False),
    Api(K.ALTER_USER_SCRAM_CREDENTIALS, 0, 0, SecurityApi.alter_user_scram_credentials,
        guards.alter_user_scram_credentials, edits=True),
    Api(K.CREATE_DELEGATION_TOKEN, 1, 3, TokenApi.create_delegation_token, guards.tokens, edits=True,
        takes=Takes.PEER),
    Api(K.RENEW_DELEGATION_TOKEN, 1, 2, TokenApi.renew_delegation_token, guards.tokens, edits=True,
        takes=Takes.PEER),
    Api(K.EXPIRE_DELEGATION_TOKEN, 1, 2, TokenApi.expire_delegation_token, guards.tokens, edits=True,
        takes=Takes.PEER),
    Api(K.DESCRIBE_DELEGATION_TOKEN, 1, 3, TokenApi.describe_delegation_token, guards.tokens, edits=False,
        takes=Takes.PEER),
)
