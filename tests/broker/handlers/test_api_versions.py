"""ApiVersions on the handler harness: every API this broker serves with the versions wire/apis
declares, the finalized features, and the client's software kept on its connection (KIP-511)."""
import pytest

from josefk.broker.dispatch import served
from josefk.wire.apis import API_BY_KEY, API_VERSIONS, SHARE_FETCH
from testkit.handlers import Connection, Services, call


def test_every_served_api_with_its_declared_versions(services):
    resp = call(services, API_VERSIONS, API_VERSIONS.Request())
    assert resp.error_code == 0
    advertised = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
    assert advertised == {key: (API_BY_KEY[key].min_version, API_BY_KEY[key].max_version)
                          for key in served(services.config)}
    assert [k.api_key for k in resp.api_keys] == sorted(advertised)


def test_a_switched_off_api_is_not_advertised(tmp_path):
    on, off = (Services(tmp_path / name, {"group.share.enable": value})
               for name, value in (("on", "true"), ("off", "false")))
    try:
        keys = [{k.api_key for k in call(s, API_VERSIONS, API_VERSIONS.Request()).api_keys}
                for s in (on, off)]
        assert SHARE_FETCH.key in keys[0] and SHARE_FETCH.key not in keys[1]
        finalized = [{f.name for f in call(s, API_VERSIONS, API_VERSIONS.Request())
                      .finalized_features} for s in (on, off)]
        assert "share.version" in finalized[0] - finalized[1]
    finally:
        on.close()
        off.close()


@pytest.mark.parametrize("version, kept", [(3, ("librdkafka", "2.8.0")), (2, None)])
def test_the_clients_software_is_kept_from_version_3(services, version, kept):
    conn = Connection()
    call(services, API_VERSIONS, API_VERSIONS.Request(client_software_name="librdkafka",
                                                      client_software_version="2.8.0"),
         version=version, connection=conn)
    assert conn.client_software == kept
