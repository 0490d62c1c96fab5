"""DescribeUserScramCredentials and AlterUserScramCredentials (KIP-554). The client sends the
salted password; the broker stores only the salt, stored key, server key and iterations."""
from __future__ import annotations

from typing import TYPE_CHECKING

from josefk.broker.security import acl
from josefk.broker.security.authorizer import CLUSTER, CLUSTER_NAME, allowed
from josefk.broker.security.sasl import (MAX_ITERATIONS, MIN_ITERATIONS, SCRAM_CODES,
                                         SCRAM_MECHANISMS, parse_credential, scram_credential)
from josefk.wire import errors
from josefk.wire.apis import ALTER_USER_SCRAM_CREDENTIALS, DESCRIBE_USER_SCRAM_CREDENTIALS

if TYPE_CHECKING:
    from josefk.broker.handlers.services import Services
    from josefk.wire.apis import (AlterUserScramCredentialsRequest,
                                  DescribeUserScramCredentialsRequest)


async def handle_describe_user_scram_credentials(broker: Services, ctx,
                                                 req: DescribeUserScramCredentialsRequest):
    R = DESCRIBE_USER_SCRAM_CREDENTIALS.Response
    store = broker.credentials
    if req.users is None or not req.users:
        users = await store.all_users()
        names = sorted(users)
    else:
        names = [u.name for u in req.users]
        if len(set(names)) != len(names):
            dup = sorted({n for n in names if names.count(n) > 1})
            return R(results=[R.DescribeUserScramCredentialsResult(
                user=n, error_code=errors.DUPLICATE_RESOURCE,
                error_message=f"Cannot describe SCRAM credentials for the same user twice in a "
                f"single request: {n}") for n in dup], error_message=None)
        users = {n: await store.get(n) for n in names}
    results = []
    for name in names:
        creds = users.get(name) or {}
        if not creds:
            results.append(R.DescribeUserScramCredentialsResult(
                user=name, error_code=errors.RESOURCE_NOT_FOUND,
                error_message=f"Attempt to describe a user credential that does not exist: {name}"))
            continue
        results.append(R.DescribeUserScramCredentialsResult(user=name, error_message=None, credential_infos=[
            R.DescribeUserScramCredentialsResult.CredentialInfo(
                mechanism=SCRAM_CODES[m], iterations=parse_credential(c)[3])
            for m, c in sorted(creds.items())]))
    return R(results=results, error_message=None)


async def handle_alter_user_scram_credentials(broker: Services, ctx,
                                              req: AlterUserScramCredentialsRequest):
    R = ALTER_USER_SCRAM_CREDENTIALS.Response
    store = broker.credentials
    if not allowed(broker, ctx, CLUSTER, CLUSTER_NAME, acl.ALTER):
        names = dict.fromkeys(op.name for op in [*req.deletions, *req.upsertions])
        return R(results=[R.AlterUserScramCredentialsResult(
            user=n, error_code=errors.CLUSTER_AUTHORIZATION_FAILED,
            error_message="Cluster authorization failed.") for n in names])
    problems: dict[str, tuple[int, str]] = {}
    seen = {}
    for op in [*req.deletions, *req.upsertions]:
        mechanism = SCRAM_MECHANISMS.get(op.mechanism)
        if (op.name, op.mechanism) in seen:
            problems.setdefault(op.name, (errors.DUPLICATE_RESOURCE, "A user credential cannot "
                                          "be altered twice in the same request"))
        seen[(op.name, op.mechanism)] = True
        if not op.name:
            problems.setdefault(op.name, (errors.UNACCEPTABLE_CREDENTIAL, "Username must not "
                                          "be empty"))
        elif mechanism is None:
            problems.setdefault(op.name, (errors.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM "
                                          "mechanism"))
    for op in req.upsertions:
        if not MIN_ITERATIONS <= op.iterations <= MAX_ITERATIONS:
            problems.setdefault(op.name, (errors.UNACCEPTABLE_CREDENTIAL, "Too few iterations"
                                          if op.iterations < MIN_ITERATIONS else
                                          "Too many iterations"))
    names = list(dict.fromkeys(op.name for op in [*req.deletions, *req.upsertions]))
    results = []
    for name in names:
        if name in problems:
            code, message = problems[name]
            results.append(R.AlterUserScramCredentialsResult(user=name, error_code=code,
                                                             error_message=message))
            continue
        creds = await store.get(name)
        for d in req.deletions:
            if d.name == name and SCRAM_MECHANISMS[d.mechanism] not in creds:
                problems[name] = (errors.RESOURCE_NOT_FOUND, "Attempt to delete a user "
                                  "credential that does not exist")
            elif d.name == name:
                del creds[SCRAM_MECHANISMS[d.mechanism]]
        for u in req.upsertions:
            if u.name == name:
                m = SCRAM_MECHANISMS[u.mechanism]
                creds[m] = scram_credential(m, u.salt, u.salted_password, u.iterations)
        if name in problems:
            code, message = problems[name]
            results.append(R.AlterUserScramCredentialsResult(user=name, error_code=code,
                                                             error_message=message))
            continue
        await store.put(name, creds)
        results.append(R.AlterUserScramCredentialsResult(user=name, error_message=None))
    return R(results=results)
