"""Secrets never leave conf: with ``sasl.password`` (and ``ssl.key.password``) set against a SASL QuotaBroker,
everything a caller, an operator or a collector can see is captured and searched for them:

- every log record at DEBUG, ours and the test broker's, and librdkafka's own ``debug=all`` output (forwarded by
  confluent-kafka to the ``logger=`` passed to the client);
- reprs and strs of the client, its futures, results, exceptions, options and metrics;
- exception messages: authentication failures, constructor errors, librdkafka's conf errors;
- OpenTelemetry data (every metric, attribute and description) read through ``InMemoryMetricReader``;
- the broker's request log.
The CLI's output and the pipeline's results have their own secret tests (tests/test_cli*.py, provisioning).
"""

from __future__ import annotations

import base64
import http.server
import logging
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

import throttled_admin._client as client_module
from tests.reliability_helpers import outcomes
from tests.support import BrokerFactory
from throttled_admin import (
    CreateTopicsOptions,
    MutationQuota,
    NewPartitions,
    NewTopic,
    ThrottledAdminClient,
)
from throttled_admin._driver.scheduler import Scheduler
from throttled_admin.testing import QuotaBroker

PASSWORD = "Pw-7f3a9c-s3cr3t"
WRONG_PASSWORD = "Pw-0d41e8-wr0ng"
KEY_PASSWORD = "Kp-51b2aa-k3y"
SECRETS = (PASSWORD, WRONG_PASSWORD, KEY_PASSWORD)


def _conf(broker: QuotaBroker, password: str, **extra: Any) -> dict[str, Any]:
    return {
        "bootstrap.servers": broker.bootstrap_servers,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": "alice",
        "sasl.password": password,
        "ssl.key.password": KEY_PASSWORD,  # unused on this listener, but in conf all the same
        "client.id": "secrets-test",
        **extra,
    }


def _assert_hidden(where: str, text: str) -> None:
    for secret in SECRETS:
        assert secret not in text, f"a secret appears in {where}"
    # nor a recognisable part of one (a prefix cut off by a length limit, for example)
    for secret in SECRETS:
        assert secret[3:12] not in text, f"part of a secret appears in {where}"


@pytest.fixture
def librdkafka_logger() -> Iterator[logging.Logger]:
    logger = logging.getLogger("tests.secrets.librdkafka")
    logger.setLevel(logging.DEBUG)
    yield logger
    logger.setLevel(logging.NOTSET)


@pytest.mark.slow
def test_password_appears_nowhere(
    quota_broker: BrokerFactory, caplog: pytest.LogCaptureFixture, librdkafka_logger: logging.Logger
) -> None:
    caplog.set_level(logging.DEBUG)
    broker = quota_broker(
        users={"alice": PASSWORD}, controller_mutation_rate=20, quota_window_num=1, enforcement="strict"
    )
    broker.create_topic("grow-me", 1)
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    seen: list[str] = []
    conf = _conf(
        broker,
        PASSWORD,
        debug="all",
        logger=librdkafka_logger,
        error_cb=lambda error: seen.append(str(error)),
        throttle_cb=lambda event: seen.append(str(event)),
        stats_cb=lambda stats: seen.append(stats),
        **{"statistics.interval.ms": 200},
    )
    admin = ThrottledAdminClient(conf, mutation_quota=MutationQuota(rate=20), meter_provider=provider)
    try:
        texts = {"client repr": repr(admin), "client str": str(admin), "client attributes": repr(vars(admin))}
        created = admin.create_topics(  # wait_for_metadata: the broker-views reader authenticates too
            [NewTopic(f"s-{i}", 8, 1) for i in range(4)],
            options=CreateTopicsOptions(timeout_ms=30000, wait_for_metadata=True),
        )
        texts["futures"] = repr(created)
        results = {
            **outcomes(created),
            **outcomes(admin.create_partitions([NewPartitions("grow-me", 3)])),
            **outcomes(admin.delete_topics(["s-0", "no-such-topic"])),
            **outcomes(admin.create_topics([NewTopic("grow-me", 1, 1)])),  # TOPIC_ALREADY_EXISTS
        }
        assert results["no-such-topic"] is not None
        assert results["grow-me"] is not None
        texts["results"] = repr(results) + "".join(str(exc) for exc in results.values() if exc is not None)
        texts["metrics"] = repr(admin.metrics())
        texts["quota"] = repr(admin.mutation_quota)
        texts["list_topics"] = repr(admin.list_topics(timeout=10).topics)
    finally:
        admin.close()
    texts["closed client"] = repr(admin)
    assert broker.topics() == {"grow-me": 3, "s-1": 8, "s-2": 8, "s-3": 8}

    # librdkafka's debug=all really was forwarded (else this test would prove nothing about it)
    rdkafka = [r for r in caplog.records if r.name == librdkafka_logger.name]
    assert len(rdkafka) > 50
    assert any("SASL" in r.getMessage() for r in rdkafka)
    texts["logs"] = "\n".join(f"{r.name} {r.getMessage()} {r.exc_text or ''}" for r in caplog.records)
    texts["log text"] = caplog.text
    texts["callbacks"] = "\n".join(seen)
    assert any("throttle" in s.lower() or "brokers" in s for s in seen)

    data = reader.get_metrics_data()
    assert data is not None
    texts["OpenTelemetry"] = data.to_json()
    assert "throttled_admin.requests" in texts["OpenTelemetry"]
    provider.shutdown()

    log = broker.request_log()
    assert {r.principal for r in log if r.api_name == "CreateTopics"} == {"alice"}
    assert any(
        r.api_name == "Metadata" and r.api_version >= 10 and set(r.errors) == {f"s-{i}" for i in range(4)} for r in log
    )  # the reader's own read, authenticated
    texts["request log"] = repr(log)
    texts["broker"] = repr(broker)
    for where, text in texts.items():
        _assert_hidden(where, text)


@pytest.mark.parametrize("password", [WRONG_PASSWORD, PASSWORD], ids=["wrong-password", "unknown-user"])
def test_authentication_failures_do_not_echo_the_password(
    quota_broker: BrokerFactory, caplog: pytest.LogCaptureFixture, librdkafka_logger: logging.Logger, password: str
) -> None:
    caplog.set_level(logging.DEBUG)
    broker = quota_broker(users={"alice": PASSWORD})
    conf = _conf(broker, password, debug="security,broker", logger=librdkafka_logger)
    if password == PASSWORD:
        conf["sasl.username"] = "mallory"
    with ThrottledAdminClient(conf) as admin:
        results = outcomes(admin.create_topics([NewTopic("refused", 1, 1)], timeout_ms=30000), timeout_s=40)
    exc = results["refused"]
    assert isinstance(exc, KafkaException)
    assert "authentication" in str(exc).lower()
    _assert_hidden("the authentication error", f"{exc!r} {exc} {exc.args!r}")
    _assert_hidden("logs", caplog.text)
    _assert_hidden("request log", repr(broker.request_log()))
    assert broker.topics() == {}


@pytest.mark.parametrize(
    ("kwargs", "extra"),
    [
        ({"metrics_num_samples": 2.5}, {}),
        ({"meter_provider": "x"}, {}),
        ({}, {"retry.backoff.ms": "abc"}),
        ({}, {"throttle_cb": 5}),
        ({}, {"no.such.property": "1"}),  # librdkafka's own conf error
        ({}, {"sasl.mechanism": "NOT-A-MECHANISM"}),
    ],
)
def test_constructor_errors_do_not_echo_the_password(
    kwargs: dict[str, Any], extra: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    conf = {
        "bootstrap.servers": "127.0.0.1:9",
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": "alice",
        "sasl.password": PASSWORD,
        **extra,
    }
    with pytest.raises((TypeError, ValueError, KafkaException)) as raised:
        ThrottledAdminClient(conf, **kwargs)
    _assert_hidden("the constructor's error", f"{raised.value!r} {raised.value}")
    _assert_hidden("logs", caplog.text)


def test_other_secret_settings_are_not_echoed(caplog: pytest.LogCaptureFixture) -> None:
    """Any conf key that looks like a secret stays out of the client's repr and attributes."""
    caplog.set_level(logging.DEBUG)
    conf = {
        "bootstrap.servers": "127.0.0.1:9",
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "OAUTHBEARER",
        "sasl.oauthbearer.method": "oidc",
        "sasl.oauthbearer.client.id": "client",
        "sasl.oauthbearer.client.secret": PASSWORD,
        "sasl.oauthbearer.token.endpoint.url": "http://127.0.0.1:9/token",
        "ssl.key.password": KEY_PASSWORD,
    }
    admin = ThrottledAdminClient(conf)
    try:
        _assert_hidden("repr", f"{admin!r} {admin} {vars(admin)!r}")
    finally:
        admin.close()
    _assert_hidden("logs", caplog.text)


@pytest.mark.parametrize(
    "key",
    [
        "sasl.password",
        "ssl.key.password",
        "sasl.oauthbearer.client.secret",
        "sasl.jaas.config",
        "sasl.oauthbearer.assertion.private.key.passphrase",  # review 108: these three were shown
        "ssl.key.pem",
        "sasl.oauthbearer.assertion.private.key.pem",
    ],
)
def test_a_profile_and_the_cli_hide_every_secret_setting(key: str) -> None:
    """One list of secret settings for provisioning's Profile and the CLI's Redactor (there were two, and neither
    knew a passphrase or a private key in PEM)."""
    from throttled_admin.cli._conf import Redactor
    from throttled_admin.provisioning import Profile

    secret = "PASSPHRASE-123-never"
    profile = Profile("east", {"bootstrap.servers": "h:1", key: secret})
    assert secret not in repr(profile)
    assert Redactor([{key: secret}])(f"librdkafka said {secret}") == "librdkafka said [hidden]"
    assert "h:1" in repr(profile)


def test_a_short_secret_is_hidden_where_it_stands_alone_not_inside_an_address_or_a_word() -> None:
    """Review 108: a short password was hidden wherever its characters occurred, which mangled the text and said
    what the password was (``kafka`` made ``kafka:9092`` read ``***:9092``)."""
    from throttled_admin._kafka.secrets import SHORT_SECRET, redact

    assert redact("cannot connect to kafka:9092 (kafka-1, mykafka)", ["kafka"]) == (
        "cannot connect to kafka:9092 (kafka-1, mykafka)"
    )
    assert redact("127.0.0.1:9092, node 1", ["1"]) == "127.0.0.1:9092, node ***"
    said = "password=kafka; value 'kafka' or \"kafka\", [kafka] kafka"
    assert redact(said, ["kafka"]) == "password=***; value '***' or \"***\", [***] ***"
    long = "x" * SHORT_SECRET  # as long as that, a secret is hidden wherever it occurs, inside a URL too
    assert redact(f"https://user:{long}@host/{long}x", [long]) == "https://user:***@host/***x"
    assert redact("a+b (a+b)", ["a+b"]) == "*** (***)"  # a secret is text, not a pattern
    # Where a credential goes (review 112): in a URL, after a ':' or at a sentence's end, a short secret is hidden too
    for said, hidden in (
        ("Failed to resolve 'alice:kafka@broker:9092'", "Failed to resolve 'alice:***@broker:9092'"),
        ("https://client:kafka@idp/token", "https://client:***@idp/token"),
        ("password:kafka", "password:***"),
        ("the password is kafka.", "the password is ***."),
        ("https://kafka.example/ and kafka.internal:9092", "https://kafka.example/ and kafka.internal:9092"),
    ):
        assert redact(said, ["kafka"]) == hidden


_OAUTH_SECRET = "S3cr3t-Pa55-XYZ"


@pytest.mark.parametrize(
    ("conf", "said"),
    [
        # librdkafka quotes the rest of the line from the field it cannot read, or that field's value (helper 129)
        ({"sasl.oauthbearer.config": f"principal=alice clientSecret={_OAUTH_SECRET} scope=x"}, "beginning at: {rest}"),
        ({"sasl.oauthbearer.config": f"principal=alice lifeSeconds={_OAUTH_SECRET}"}, "'lifeSeconds=': {value}"),
        # an identity provider echoing the token request's HTTP Basic credentials, or its URL's query
        (
            {"sasl.oauthbearer.client.id": "cid", "sasl.oauthbearer.client.secret": _OAUTH_SECRET},
            "bad credentials in Basic {basic}",
        ),
        ({"sasl.oauthbearer.token.endpoint.url": f"https://idp/t?client_secret={_OAUTH_SECRET}"}, "{query}"),
    ],
)
def test_a_profile_and_the_cli_hide_the_forms_a_secret_is_quoted_in(conf: dict[str, str], said: str) -> None:
    """A secret quoted in part or encoded: provisioning hid only whole values, so the results said
    ``... beginning at: clientSecret=S3cr3t-Pa55-XYZ`` (helper 129); the CLI knew the Basic and URL forms alone."""
    import base64

    from throttled_admin._kafka.secrets import redact
    from throttled_admin.cli._conf import Redactor
    from throttled_admin.provisioning import Profile

    config = conf.get("sasl.oauthbearer.config", "")
    message = said.format(
        rest=config[config.find("clientSecret") :],
        value=_OAUTH_SECRET,
        basic=base64.b64encode(f"cid:{_OAUTH_SECRET}".encode()).decode(),
        query=f"client_secret={_OAUTH_SECRET}",
    )
    profile = Profile("east", {"bootstrap.servers": "h:1", **conf})
    for hidden in (redact(message, profile.secrets()), Redactor([conf])(message)):
        assert "S3cr3t" not in hidden
        assert "UzNjcjN0" not in hidden  # (the secret's own base64)
        assert base64.b64encode(f"cid:{_OAUTH_SECRET}".encode()).decode() not in hidden


def test_a_plans_result_never_quotes_a_secret_of_an_oauthbearer_config(quota_broker: BrokerFactory) -> None:
    """The end to end of the above: a field librdkafka cannot read fails the group's rows with its words."""
    from throttled_admin.provisioning import PlanRow, apply_plan

    broker = quota_broker(users={"alice": "pw"})
    conf = {
        "bootstrap.servers": broker.bootstrap_servers,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanisms": "OAUTHBEARER",
        "enable.sasl.oauthbearer.unsecure.jwt": "true",
        "sasl.oauthbearer.config": f"principal=alice clientSecret={_OAUTH_SECRET}",
    }
    [result] = apply_plan([PlanRow("east", "ensure", "t", 1)], {"east": conf})
    assert result.status == "failed", result
    assert "Unrecognized sasl.oauthbearer.config beginning at: ***" in (result.error_message or ""), result
    assert "S3cr3t" not in repr(result)


def test_a_profiles_repr_shows_a_callback_by_its_kind_alone() -> None:
    """A callback bound to a credential (helper 129: ``functools.partial(fetch_token, client_secret=...)``)."""
    import functools

    from throttled_admin.provisioning import Profile

    def fetch(config: str, client_secret: str) -> tuple[str, float]:
        return "token", 0.0

    bound = functools.partial(fetch, client_secret="S3cr3t")
    profile = Profile("west", {"bootstrap.servers": "h:1", "oauth_cb": bound})  # type: ignore[dict-item]  # (as users do)
    assert "S3cr3t" not in repr(profile)
    assert "'oauth_cb': '<partial>'" in repr(profile)


def test_an_oauthbearer_configs_names_scopes_and_lifetime_stay_readable() -> None:
    """The principal is the name the broker charges and its messages give (``User:alice``), shown as ``sasl.username``
    is; a scope and a lifetime of seconds hold no secret either, and hidden they made ``Throttled for 3600 ms`` read
    ``Throttled for *** ms`` (review 130). The rest of the line from each field is hidden, as librdkafka quotes it."""
    from throttled_admin._kafka.secrets import redact
    from throttled_admin.provisioning import Profile

    config = "principal=alice scope=kafka lifeSeconds=3600 principalClaimName=sub extension_x=s3cr3t-ext"
    profile = Profile("east", {"sasl.oauthbearer.config": config})
    said = "Principal = User:alice is not authorized; Throttled for 3600 ms; scope kafka; sub"
    assert redact(said, profile.secrets()) == said
    assert redact("beginning at: extension_x=s3cr3t-ext", profile.secrets()) == "beginning at: ***"
    assert redact("value: s3cr3t-ext", profile.secrets()) == "value: ***"


def test_a_secret_given_as_a_number_is_hidden() -> None:
    """Review 130: a Profile made in code may hold a password of digits as an int; only strings were hidden."""
    from throttled_admin._kafka.secrets import redact
    from throttled_admin.provisioning import Profile

    profile = Profile("east", {"sasl.password": 987654321})  # type: ignore[dict-item]  # (as code may give it)
    assert redact("bad password 987654321", profile.secrets()) == "bad password ***"
    oidc = {"sasl.oauthbearer.client.id": 123456789, "sasl.oauthbearer.client.secret": "S3cr3t-Pa55-XYZ"}
    basic = base64.b64encode(b"123456789:S3cr3t-Pa55-XYZ").decode()
    assert redact(f"Basic {basic}", Profile("east", oidc).secrets()) == "Basic ***"  # type: ignore[arg-type]


@pytest.fixture
def echoing_idp() -> Iterator[str]:
    """An OIDC token endpoint that refuses every request quoting its ``Authorization`` header (HTTP Basic: base64 of
    client id and secret), as some identity providers do; its URL."""

    class Refuse(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            body = f"bad credentials for {self.headers.get('Authorization', '')}".encode()
            self.send_response(401)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Refuse)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"127.0.0.1:{server.server_address[1]}/token"
    server.shutdown()
    server.server_close()
    thread.join()


@pytest.mark.parametrize("where", ["client secret", "token endpoint URL"])
def test_what_librdkafka_quotes_of_an_identity_provider_hides_the_secret(
    quota_broker: BrokerFactory,
    echoing_idp: str,
    capfd: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
    librdkafka_logger: logging.Logger,
    where: str,
) -> None:
    """Red-team 133: librdkafka quotes an identity provider's refusal in its error (``Failed to acquire SASL
    OAUTHBEARER token: <the body>``) and its log line (``Failed to retrieve OIDC token from "<URL>": <the body>``,
    level 3), and the body may echo the request's HTTP Basic credentials; a URL may carry credentials of its own.
    Neither may reach the topic's exception, ``error_cb``, the log on stderr or a ``logger`` from conf, nor the log of
    the clients that read the brokers' views for ``wait_for_metadata``."""
    caplog.set_level(logging.DEBUG)
    broker = quota_broker()
    secret, url = PASSWORD, f"http://{echoing_idp}"
    if where == "token endpoint URL":
        secret, url = KEY_PASSWORD, f"http://alice:{PASSWORD}@{echoing_idp}?api_key={WRONG_PASSWORD}"
    basic = base64.b64encode(f"alice:{secret}".encode()).decode()
    conf = {
        "bootstrap.servers": broker.bootstrap_servers,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanisms": "OAUTHBEARER",
        "sasl.oauthbearer.method": "oidc",
        "sasl.oauthbearer.client.id": "alice",
        "sasl.oauthbearer.client.secret": secret,
        "sasl.oauthbearer.token.endpoint.url": url,
    }
    errors: list[str] = []
    seen = []
    for logger in (None, librdkafka_logger):  # librdkafka's lines to stderr, then to a logger from conf
        more = {} if logger is None else {"logger": logger, "error_cb": lambda error: errors.append(error.str())}
        # (the first also reads the brokers' views: OAUTHBEARER through librdkafka clients of their own, review 135)
        options = CreateTopicsOptions(timeout_ms=8000, wait_for_metadata=logger is None)
        with ThrottledAdminClient({**conf, **more}) as admin:
            seen.append(outcomes(admin.create_topics([NewTopic("t", 1, 1)], options=options), timeout_s=40)["t"])
    said = capfd.readouterr().err
    assert all(isinstance(exc, KafkaException) and "OAUTHBEARER" in str(exc) for exc in seen), seen
    assert "Failed to retrieve OIDC token" in said  # (librdkafka's line, to stderr)
    assert "Failed to retrieve OIDC token" in caplog.text  # (and to the logger from conf)
    assert errors, "no error_cb event"
    texts = {"the exceptions": repr(seen) + str(seen), "stderr": said, "logs": caplog.text, "error_cb": repr(errors)}
    for name, text in texts.items():
        _assert_hidden(name, text)
        assert basic not in text, f"the HTTP Basic credentials appear in {name}"
    assert "Basic ***" in str(seen[0]) or "Basic ***" in said  # (what the provider said stays readable)


def test_an_authentication_failure_told_while_the_client_is_made_fails_its_first_call(
    quota_broker: BrokerFactory, echoing_idp: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found as the quorum's baseline moved to the client's making (issue 40): the scheduler's first turn polled the
    handle before the client had told librdkafka's callbacks where the engine is, and an error polled then reached
    the application's error_cb but not the engine. An OIDC token refused at once (librdkafka fetches it as the handle
    is made) was such an error: the first call waited for a broker's answer until its deadline ("not sent"). Here
    the client is slow between its scheduler's making and the rest of its making, as a loaded machine makes it."""
    told = threading.Event()

    class SlowToRegister(Scheduler):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            told.wait(2.0)  # (the error polled, if a turn polls before the client is made)

    monkeypatch.setattr(client_module, "Scheduler", SlowToRegister)
    conf = {
        "bootstrap.servers": quota_broker().bootstrap_servers,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanisms": "OAUTHBEARER",
        "sasl.oauthbearer.method": "oidc",
        "sasl.oauthbearer.client.id": "alice",
        "sasl.oauthbearer.client.secret": PASSWORD,
        "sasl.oauthbearer.token.endpoint.url": f"http://{echoing_idp}",
        "error_cb": lambda error: told.set(),
        "log_level": 0,
    }
    with ThrottledAdminClient(conf) as admin:
        exc = outcomes(admin.create_topics([NewTopic("t", 1, 1)], timeout_ms=8000), timeout_s=30)["t"]
    assert type(exc) is KafkaException, repr(exc)
    assert exc.args[0].code() == KafkaError._AUTHENTICATION
    assert told.is_set()


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("west: {bootstrap.servers: 'h:1', sasl.username: alice, sasl.password:%s}\n", "whose value is no string"),
        ("west: {bootstrap.servers: 'h:1', sasl.username: alice, sasl.password=%s}\n", "whose value is no string"),
        ("west:\n  bootstrap.servers: 'h:1'\n  sasl.username: alice\n  %s: x\n", "that librdkafka does not know"),
        ("west:\n  bootstrap.servers: 'h:1'\n  sasl.username: alice\n  password%s: x\n", "that librdkafka does not"),
        ("west:\n  bootstrap.servers: 'h:1'\n  sasl.username: alice\n  sasl.password.%s: x\n", "that librdkafka"),
    ],
    ids=["after-a-colon-with-no-space", "after-an-equals-sign", "on-a-line-of-its-own", "like-a-word", "dotted"],
)
def test_a_password_read_as_a_profiles_key_is_not_named(tmp_path: Path, text: str, problem: str) -> None:
    """Red-team 133: YAML reads ``sasl.password:pw`` in a flow map (no space after ':') as one key with no value, and
    a password on a line of its own as a key; the file's error named the key. A key is named only where it reads as a
    setting's name; the others beside it are, to find it by."""
    from throttled_admin.provisioning import PlanError, read_profiles

    path = tmp_path / "profiles.yaml"
    path.write_text(text % PASSWORD)
    with pytest.raises(PlanError) as raised:
        read_profiles(path)
    said = str(raised.value)
    _assert_hidden("the profiles file's error", said)
    assert f"profile 'west': a key that is not a setting's name {problem}" in said, said
    assert "the keys beside it: bootstrap.servers, sasl.username" in said, said


def test_a_misspelt_profile_key_is_still_named() -> None:
    """The other side of the above: a key written as settings' names are is named, with the closest one."""
    from throttled_admin.provisioning import PlanError
    from throttled_admin.provisioning._profile import profile_from_conf

    with pytest.raises(PlanError, match=r"field 'sasl.passwrd': unknown key .*did you mean 'sasl.password'\?"):
        profile_from_conf("west", {"bootstrap.servers": "h:1", "sasl.passwrd": PASSWORD})
    with pytest.raises(PlanError, match=r"field 'sasl.oauthbearer.token.endpoint.ur': unknown key"):
        profile_from_conf("west", {"bootstrap.servers": "h:1", "sasl.oauthbearer.token.endpoint.ur": "http://h/t"})
    with pytest.raises(PlanError, match=r"did you mean 'sasl.mechanism'\?"):
        profile_from_conf("west", {"bootstrap.servers": "h:1", "SASL.MECHANISM": "PLAIN"})
    with pytest.raises(PlanError, match=r"field 'sasl.username': must be a string, number or boolean"):
        profile_from_conf("west", {"bootstrap.servers": "h:1", "sasl.username": None})


@pytest.mark.parametrize("first", ["a refused call", "librdkafka's retries alone"])
def test_new_credentials_are_used_at_once_after_an_authentication_failure(
    quota_broker: BrokerFactory, first: str
) -> None:
    """Adversarial probe 134: after ``set_sasl_credentials`` put right a wrong password, every call still failed at
    once for 5 s with the old "Invalid username or password" (the engine holds an authentication failure that long,
    for what is submitted after it; only a broker's answer to a mutation ended it, and none could be sent). Review
    135: the old credentials' failures librdkafka had queued before the change (it retries every few hundred ms) came
    after it and held it again. New credentials end it, and reach every connection the client makes:
    wait_for_metadata's reads too."""
    broker = quota_broker(users={"alice": PASSWORD})
    failing = threading.Event()

    def error_cb(error: KafkaError) -> None:
        if error.code() == KafkaError._AUTHENTICATION:
            failing.set()

    with ThrottledAdminClient(_conf(broker, WRONG_PASSWORD, error_cb=error_cb)) as admin:
        if first == "a refused call":
            refused = outcomes(admin.create_topics([NewTopic("before", 1, 1)], timeout_ms=10000), timeout_s=20)
            assert isinstance(refused["before"], KafkaException), refused
            assert refused["before"].args[0].code() == KafkaError._AUTHENTICATION
        assert failing.wait(20), "librdkafka told no authentication failure"
        admin.set_sasl_credentials("alice", PASSWORD)
        options = CreateTopicsOptions(timeout_ms=20000, wait_for_metadata=True)
        after = admin.create_topics([NewTopic("after", 1, 1)], options=options)
        assert outcomes(after, timeout_s=30) == {"after": None}
    assert broker.topics() == {"after": 1}
