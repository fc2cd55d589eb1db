"""The command line's grammar: argparse with kafka-topics.sh's option spellings, and its argument checks.

kafka-topics.sh (``TopicCommand.TopicCommandOptions.checkArgs``) rejects option combinations with
messages such as ``Option "[config]" can't be used with option "[describe]"``; the same checks and
messages are made here, but as usage errors (exit 2, with the usage), the Unix convention scripts test for.
"""

from __future__ import annotations

import argparse
import difflib
import re
from collections.abc import Mapping, Sequence
from typing import Any, NoReturn

from throttled_admin import __version__
from throttled_admin.cli._conf import credentials_twice, jaas_problem, java_only, python_only
from throttled_admin.cli._java_settings import DEFAULT_API_TIMEOUT, java_refusal
from throttled_admin.cli._properties import PropertiesError, Settings, java_trim, load_properties

__all__ = [
    "ACTIONS",
    "READING_ACTIONS",
    "UsageError",
    "build_parser",
    "check_bootstrap",
    "check_topics_args",
    "command_timeout",
    "parse_replica_assignment",
    "parse_topic_configs",
    "read_command_config",
    "topic_pattern",
    "unrecognized",
]

ACTIONS = ("create", "delete", "alter", "describe", "list")
READING_ACTIONS = ("describe", "list")  # the actions that change nothing
#: kafka-topics.sh's options that ``topics`` does not take (docs/cli.md): named so, not matched to a near one ("did you
#: mean --delete?" for --delete-config, helper 119).
UNSUPPORTED = (
    "--topic-id",
    "--under-replicated-partitions",
    "--under-min-isr-partitions",
    "--at-min-isr-partitions",
    "--unavailable-partitions",
    "--topics-with-overrides",
    "--partition-size-limit-per-response",
    "--delete-config",
)
_CONFIGS_HINT = " (To alter topic configurations, the kafka-configs tool can be used.)"


class UsageError(Exception):
    """Bad arguments: printed with the usage of ``parser``; exit 2."""

    def __init__(self, message: str, parser: argparse.ArgumentParser | None = None) -> None:
        super().__init__(message)
        self.parser = parser


class _Parser(argparse.ArgumentParser):
    # argparse would print and sys.exit(2) itself; main() returns the code instead (testable, embeddable).
    def error(self, message: str) -> NoReturn:
        raise UsageError(message, self)


_INT32 = range(-(2**31), 2**31)  # a Java int


#: --timeout-ms's most: confluent-kafka's request timeouts go to an hour (``describe_topics`` refused more: "expecting
#: integer in range 0..3600000"), and beyond 32 bits librdkafka timed out at once.
MAX_TIMEOUT_MS = 3_600_000


#: --timeout-ms when neither it nor --command-config's default.api.timeout.ms is given: Java's default (and
#: ThrottledAdminClient's ``default_api_timeout_ms``)
DEFAULT_TIMEOUT_MS = 60_000


def _timeout_ms(text: str) -> int:
    if re.fullmatch(r"[+-]?\d+", text) is None:
        raise argparse.ArgumentTypeError(f"invalid int value: {text!r}")
    value = int(text)
    if not 0 < value <= MAX_TIMEOUT_MS:
        raise argparse.ArgumentTypeError(f"must be > 0 and at most {MAX_TIMEOUT_MS} (an hour), got {value}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid float value: {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text}")
    return value


class _Once(argparse.Action):
    """A kafka-topics.sh option of one value (joptsimple's ``valueOf``): given twice, refused in its words (argparse
    kept the last: ``--delete --topic a --topic b`` deleted b, where kafka-topics.sh deletes nothing); ``apply``'s
    alike (``--bootstrap-server a --bootstrap-server b`` applied the plan to b). ``integer``:
    read as Java's ``Integer.valueOf`` reads it, a sign and digits within 32 bits (``int()`` took ``1_0`` for 10 and
    ``' 3'``, and a value beyond 32 bits ended in a traceback as it was sent)."""

    def __init__(self, option_strings: Sequence[str], dest: str, integer: bool = False, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, **kwargs)
        self.integer = integer

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        name, text = self.option_strings[-1].removeprefix("--"), str(values)
        given: set[str] = vars(namespace).setdefault("_given", set())
        if self.dest in given:
            raise UsageError(f"Found multiple arguments for option {name}, but you asked for only one", parser)
        given.add(self.dest)
        if self.integer and _java_int(text) is None:
            raise UsageError(f"Cannot parse argument '{text}' of option {name}", parser)
        setattr(namespace, self.dest, int(text) if self.integer else values)


def _add_connection(parser: argparse.ArgumentParser, *, required_note: str, once: bool = False) -> None:
    """``once``: kafka-topics.sh's options, each given at most once (``_Once``)."""
    action = _Once if once else "store"
    parser.add_argument(
        "--bootstrap-server",
        action=action,
        metavar="SERVER",
        help=f"The Kafka server(s) to connect to, host:port[,host:port]. {required_note}",
    )
    parser.add_argument(
        "--command-config",
        action=action,
        metavar="FILE",
        help="Properties file of client settings (security.protocol, sasl.*, ...) passed to the "
        "client; Java's sasl.jaas.config with a Plain or Scram login module is understood.",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="throttled-admin", description="Kafka topic administration that survives broker quotas.")
    parser.add_argument("--version", action="version", version=f"throttled-admin {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    topics = commands.add_parser(
        "topics",
        help="create, delete, alter, describe or list topics, as kafka-topics.sh",
        description="Create, delete, describe, or change a topic, as kafka-topics.sh does. Quota retry is "
        "off unless --retry-on-quota-violation is given.",
    )
    topics.add_argument("--version", action="version", version=f"throttled-admin {__version__}")  # kafka-topics.sh's
    _add_connection(topics, required_note="REQUIRED.", once=True)
    actions = topics.add_argument_group("actions (exactly one)")
    actions.add_argument("--create", action="store_true", help="Create a new topic.")
    actions.add_argument("--delete", action="store_true", help="Delete the topics matching --topic.")
    actions.add_argument(
        "--alter", action="store_true", help="Alter the number of partitions and replica assignment." + _CONFIGS_HINT
    )
    actions.add_argument("--describe", action="store_true", help="List details for the given topics.")
    actions.add_argument("--list", action="store_true", help="List all available topics.")
    topics.add_argument(
        "--topic",
        action=_Once,
        metavar="TOPIC",
        help="The topic to create, alter, describe or delete. It also accepts a regular "
        "expression, except for --create.",
    )
    topics.add_argument(
        "--partitions",
        action=_Once,
        integer=True,
        metavar="N",
        help="The number of partitions for the topic being created or altered "
        "(the cluster default if not given with --create).",
    )
    topics.add_argument(
        "--replication-factor",
        action=_Once,
        integer=True,
        metavar="N",
        help="The replication factor for each partition of the topic being created (the cluster default if not given).",
    )
    topics.add_argument(
        "--replica-assignment",
        action=_Once,
        metavar="ASSIGNMENT",
        help="Manual partition-to-broker assignment for the topic being created or altered: "
        "broker_id_for_part1_replica1:broker_id_for_part1_replica2,"
        "broker_id_for_part2_replica1:..., e.g. 0:1,1:2.",
    )
    topics.add_argument(
        "--config",
        action="append",
        metavar="NAME=VALUE",
        help="A topic configuration override for the topic being created (repeatable). "
        "Only with --create." + _CONFIGS_HINT,
    )
    topics.add_argument(
        "--if-exists", action="store_true", help="With --alter, --delete or --describe: only act if the topic exists."
    )
    topics.add_argument(
        "--if-not-exists",
        action="store_true",
        help="With --create: do not fail if the topic already exists (the request is still sent).",
    )
    topics.add_argument(
        "--exclude-internal", action="store_true", help="Exclude internal topics when listing or describing topics."
    )
    topics.add_argument(
        "--retry-on-quota-violation",
        action="store_true",
        help="Wait out the broker's throttle and re-send throttled topics until --timeout-ms "
        "(off by default, as kafka-topics.sh: a quota violation fails at once). A throttle longer than "
        "--timeout-ms fails at once, saying so.",
    )
    topics.add_argument(
        "--timeout-ms",
        type=_timeout_ms,
        metavar="MS",
        help="Deadline of each admin call, quota retries included (default: --command-config's "
        f"default.api.timeout.ms, as kafka-topics.sh, else {DEFAULT_TIMEOUT_MS}; at most {MAX_TIMEOUT_MS}, an hour).",
    )
    topics.add_argument(
        "--output",
        choices=("text", "json"),
        default="text",
        help="text: kafka-topics.sh's output; json: one JSON object per line for every outcome, errors included.",
    )
    topics.set_defaults(command_parser=topics)  # usage errors found after parsing print this usage

    apply = commands.add_parser(
        "apply",
        help="apply a provisioning plan, paced to the controller mutation quota",
        description="Apply a plan file (.csv, .json, .yaml) of topics, paced to each cluster's quota.",
    )
    apply.add_argument("plan", metavar="PLAN_FILE", help="The plan: .csv, .json, .yaml or .yml.")
    apply.add_argument(
        "--profiles",
        action=_Once,
        metavar="FILE",
        help="Cluster profiles (.json, .yaml): {cluster: {librdkafka settings..., mutation_rate: R, "
        "request_timeout_s: S}}; any other key is an error.",
    )
    _add_connection(apply, required_note="Used for every cluster in the plan when --profiles is not given.", once=True)
    apply.add_argument(
        "--mutation-rate",
        action=_Once,
        type=_positive_float,
        metavar="R",
        help="Without --profiles: the principal's controller mutation quota (mutations/s) to pace "
        "to; learned from the broker's throttling when not given.",
    )
    apply.add_argument(
        "--dry-run",
        action="store_true",
        help="Show what would change and the predicted duration per cluster; change nothing.",
    )
    apply.add_argument(
        "--allow-delete", action="store_true", help="Carry out the plan's delete rows (without it they fail)."
    )
    apply.add_argument(
        "--timeout",
        action=_Once,
        type=_positive_float,
        metavar="SECONDS",
        help="Each cluster's time budget. Rows the quota would hold past it are not sent (status not_sent). "
        "Default: twice the predicted time plus a minute, moved on by a throttle the broker asks for "
        "(3 times a row at most).",
    )
    apply.add_argument(
        "--output",
        choices=("table", "json"),
        default="table",
        help="table: progress and a summary table; json: one JSON object per row result, then a summary object "
        "(errors in the plan or profiles: one object).",
    )
    apply.set_defaults(command_parser=apply)
    return parser


def unrecognized(extras: list[str], parser: argparse.ArgumentParser) -> str:
    """argparse's "unrecognized arguments" message, with the closest option of ``parser`` for a typo, or saying that
    kafka-topics.sh's option is not supported here."""
    message = f"unrecognized arguments: {' '.join(extras)}"
    options = [option for action in parser._actions for option in action.option_strings]
    if "--topic" in options:  # (topics)
        for extra in extras:
            if extra.split("=", 1)[0] in UNSUPPORTED:
                return f"{message} ({extra.split('=', 1)[0]}: kafka-topics.sh's, not supported by throttled-admin)"
    for extra in extras:
        if extra.startswith("--"):
            close = difflib.get_close_matches(extra.split("=", 1)[0], options, n=1)
            if close:
                return f"{message} (did you mean {close[0]}?)"
    return message


def _invalid(used: str, other: str, parser: argparse.ArgumentParser, hint: str = "") -> UsageError:
    return UsageError(f'Option "[{used}]" can\'t be used with option "[{other}]"{hint}', parser)


def check_topics_args(args: argparse.Namespace, parser: argparse.ArgumentParser) -> str:
    """kafka-topics.sh's checkArgs; returns the one action."""
    chosen = [action for action in ACTIONS if getattr(args, action)]
    if len(chosen) != 1:
        raise UsageError(
            "Command must include exactly one action: --list, --describe, --create, --alter or --delete", parser
        )
    action = chosen[0]
    if not args.bootstrap_server:
        raise UsageError("--bootstrap-server must be specified", parser)
    check_bootstrap(args.bootstrap_server, parser)
    if action not in READING_ACTIONS and args.topic is None:
        raise UsageError('Missing required argument "[topic]"', parser)
    if action == "describe" and args.if_exists and args.topic is None:
        raise UsageError("--topic is required to describe a topic", parser)
    if action == "alter":
        if args.config:
            raise _invalid("config", "alter", parser, _CONFIGS_HINT)
        if args.partitions is None:
            raise UsageError('Missing required argument "[partitions]"', parser)
    allowed = {
        "config": ("alter", "create"),
        "partitions": ("alter", "create"),
        "replication_factor": ("create",),
        "replica_assignment": ("alter", "create"),
        "if_exists": ("alter", "delete", "describe"),
        "if_not_exists": ("create",),
        "exclude_internal": ("list", "describe"),
    }
    for option, actions in allowed.items():
        value = getattr(args, option)
        if value not in (None, False, []) and action not in actions:
            raise _invalid(option.replace("_", "-"), action, parser)
    if action == "create" and args.replica_assignment is not None:
        for other in ("partitions", "replication_factor"):
            if getattr(args, other) is not None:
                raise _invalid("replica-assignment", other.replace("_", "-"), parser)
    if args.replica_assignment is not None:
        parse_replica_assignment(args.replica_assignment, parser)  # reject a bad one before connecting
    if args.config:
        parse_topic_configs(args.config, parser)
    if args.topic is not None and action != "create":
        topic_pattern(args.topic, parser)
    if action == "create" and args.replication_factor is not None and not 1 <= args.replication_factor <= 32767:
        raise UsageError("The replication factor must be between 1 and 32767 inclusive", parser)
    if action == "create" and args.partitions is not None and args.partitions < 1:  # --alter: the broker's words
        raise UsageError("The partitions must be greater than 0", parser)
    return action


_ADDRESS = re.compile(r"^(?:[A-Za-z_]+://)?(?:\[[0-9A-Fa-f:.]+\]|[^\s:/\[\]]+):(\d+)$")


def check_bootstrap(text: str, parser: argparse.ArgumentParser | None = None) -> None:
    """Each comma-separated entry is HOST:PORT, as Java's ClientUtils.parseAndValidateAddresses requires
    (librdkafka would quietly add :9092 to "localhost9092" and try to resolve it)."""
    for entry in text.split(","):
        entry = entry.strip()
        match = _ADDRESS.match(entry)
        if match is None or not 0 < int(match.group(1)) <= 65535:
            raise UsageError(
                f"--bootstrap-server: Invalid url in bootstrap.servers: {entry} (expected HOST:PORT)", parser
            )


def _java_split(text: str, separator: str) -> list[str]:
    """Java's ``String.split``: trailing empty strings dropped (kafka-topics.sh takes ``0:1,1:2,``)."""
    parts = text.split(separator)
    while parts and not parts[-1]:
        parts.pop()
    return parts


def parse_replica_assignment(text: str, parser: argparse.ArgumentParser | None = None) -> list[list[int]]:
    """kafka-topics.sh's "0:1,1:2": partition i's replica broker ids are the i-th comma-separated group, each read as
    Java's ``Integer.parseInt`` of it trimmed; one librdkafka cannot send (below 0) is said here, in the option's
    terms and of its partition (it was "replica_assignment[0] has a broker id outside ..." of the new ones only)."""
    assignment: list[list[int]] = []
    for index, group in enumerate(_java_split(text, ",")):
        parts = [java_trim(part) for part in _java_split(group, ":")]
        if not parts or not all(_java_int(part) is not None for part in parts):
            raise UsageError(
                f"--replica-assignment: partition {index}: broker ids must be integers, got {group!r}", parser
            )
        brokers = [int(part) for part in parts]
        duplicates = sorted({b for b in brokers if brokers.count(b) > 1})
        if duplicates:
            raise UsageError(
                "Partition replica lists may not contain duplicate entries: " + ",".join(map(str, duplicates)), parser
            )
        if (negative := next((b for b in brokers if b < 0), None)) is not None:
            raise UsageError(
                f"--replica-assignment: partition {index}: broker id {negative} is below 0 (librdkafka cannot send it)",
                parser,
            )
        if assignment and len(brokers) != len(assignment[0]):
            raise UsageError(f"Partition {index} has different replication factor: {brokers}", parser)
        assignment.append(brokers)
    return assignment


def parse_topic_configs(items: list[str], parser: argparse.ArgumentParser | None = None) -> dict[str, str]:
    """--config name=value, split as kafka-topics.sh does (on '=' with the spaces around it)."""
    configs: dict[str, str] = {}
    for item in items:
        parts = re.split(r"\s*=\s*", item)
        while parts and not parts[-1]:
            parts.pop()  # Java's String.split drops trailing empty strings: "retention.ms=" is invalid
        if len(parts) != 2 or not parts[0].strip():
            raise UsageError(
                f'Invalid topic config {item!r}: all configs to be added must be in the format "key=val".', parser
            )
        configs[parts[0].strip()] = parts[1].strip()
    return configs


def topic_pattern(text: str, parser: argparse.ArgumentParser | None = None) -> re.Pattern[str]:
    """--topic as kafka-topics.sh's TopicFilter.IncludeList reads it: trimmed, ',' means '|', spaces and
    surrounding quotes dropped, matched against the whole name."""
    regex = text.strip().replace(",", "|").replace(" ", "")
    regex = re.sub(r"^[\"']+", "", regex)
    regex = re.sub(r"[\"']+$", "", regex)
    try:
        return re.compile(regex)
    except re.error:
        raise UsageError(f"{regex} is an invalid regex.", parser) from None


def command_timeout(
    args: argparse.Namespace, properties: Mapping[str, str], parser: argparse.ArgumentParser
) -> tuple[int, str, str | None]:
    """``topics``' deadline in ms, how its messages name it, and a warning to print (or None): --timeout-ms, else the
    file's default.api.timeout.ms (Java's Admin client's, which kafka-topics.sh's calls use), else Java's default,
    or its request.timeout.ms where that is longer (as Java takes it). The file's is checked as Java checks it, given
    --timeout-ms or not, and never shown; one over an hour, librdkafka's most, is taken as an hour, saying so."""
    text = properties.get(DEFAULT_API_TIMEOUT)
    request_ms = _java_int(properties.get("request.timeout.ms", "30000"))
    file_ms = None if text is None else _java_int(text)
    if text is not None and file_ms is None:
        raise UsageError(
            f"--command-config {args.command_config}: {DEFAULT_API_TIMEOUT} is not a whole number of 32 bits", parser
        )
    if file_ms is not None and request_ms is not None and file_ms < request_ms:
        raise UsageError(
            f"--command-config {args.command_config}: {DEFAULT_API_TIMEOUT} must be no smaller than "
            "request.timeout.ms (as the Java client requires)",
            parser,
        )
    if args.timeout_ms is not None:
        return args.timeout_ms, f"--timeout-ms {args.timeout_ms}", None
    if file_ms is None:
        ms = max(DEFAULT_TIMEOUT_MS, request_ms or 0)  # (librdkafka's request.timeout.ms: at most 900000)
        return ms, f"--timeout-ms {ms}", None
    if file_ms > MAX_TIMEOUT_MS:
        return (
            MAX_TIMEOUT_MS,
            f"--timeout-ms {MAX_TIMEOUT_MS}",
            f"WARNING: --command-config {args.command_config}: {DEFAULT_API_TIMEOUT} is over an hour, librdkafka's "
            f"most: each call's deadline is --timeout-ms {MAX_TIMEOUT_MS}.",
        )
    if file_ms <= 0:
        raise UsageError(f"--command-config {args.command_config}: {DEFAULT_API_TIMEOUT} must be > 0", parser)
    return file_ms, f"--command-config's {DEFAULT_API_TIMEOUT} {file_ms}", None


def _java_int(text: str) -> int | None:
    """``text`` as Java's ``Integer.parseInt`` reads it, or None: a sign allowed, decimal digits of any script within
    UTF-16's first plane (Java reads a char at a time: a digit beyond it is two, neither a digit), 32 bits."""
    if re.fullmatch(r"[+-]?\d+", text) is None or any(ord(char) > 0xFFFF for char in text) or int(text) not in _INT32:
        return None
    return int(text)


_LIBRDKAFKA_CREDENTIALS = ("sasl.username", "sasl.password")


def read_command_config(path: str | None, parser: argparse.ArgumentParser) -> Settings:
    """The settings of ``--command-config`` (none without it), each value trimmed as Java trims a setting's; a file
    that cannot be read, or holds a Java-only setting librdkafka cannot follow (``_java_settings``, ``java_only``), is
    a usage error."""
    if path is None:
        return Settings({}, {}, {})
    try:
        settings = load_properties(path)
    except PropertiesError as exc:
        raise UsageError(f"--command-config {exc}", parser) from None
    # each value trimmed, as the Java client reads a setting (librdkafka took ``client.id=C `` as "C ", another quota
    # entity than kafka-topics.sh's), but librdkafka's own credentials, which Java never reads, as written
    properties = {
        key: value if key in _LIBRDKAFKA_CREDENTIALS else java_trim(value) for key, value in settings.values.items()
    }
    problem = java_refusal(properties) or java_only(properties) or python_only(properties)
    if problem is not None:
        raise UsageError(f"--command-config {path}: {problem}", parser)
    jaas = properties.get("sasl.jaas.config")
    problem = None if jaas is None else jaas_problem(jaas)
    if problem is not None:  # (librdkafka would get what a lenient reading took from it: a password cut short)
        raise UsageError(f"--command-config {path}: sasl.jaas.config: {problem}", parser)
    problem = credentials_twice(properties)
    if problem is not None:
        raise UsageError(f"--command-config {path}: {problem}", parser)
    return Settings(properties, settings.lines, settings.continued)
