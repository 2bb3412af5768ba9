"""The flags of the long-running commands (``serve``, ``worker``, ``console``, ``witness``) from
three places besides the command line: an environment variable ``THIRTEEN_<COMMAND>_<FLAG>``
and the table ``[<command>]`` of a TOML file (``--config FILE``). A flag given on the command
line wins over the environment, the environment over the file, the file over the default.

The names are derived from the parser, so a new flag has both without a line here:
``serve --max-in-flight`` is ``THIRTEEN_SERVE_MAX_IN_FLIGHT`` and ``max-in-flight`` under
``[serve]``. A value is checked by the flag's own type, so a bad one reads as on the command
line, naming where it came from; an unknown variable or key is refused too (exit status 2, one
line): a misspelt setting silently ignored is a setting missing in production.
"""

from __future__ import annotations

import argparse
import os
import re
import tomllib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CONFIGURED = ("serve", "worker", "console", "witness")
"""The commands whose flags also come from the environment and a file."""
PREFIX = "THIRTEEN_"
TRUE = ("1", "true", "yes", "on")
FALSE = ("0", "false", "no", "off")
KINDS = (argparse._StoreAction, argparse._StoreTrueAction, argparse._AppendAction)
"""The flags a setting can give: a value, a switch, a repeatable value."""
NEGATED = "--no-"
"""A switch's counterpart on the command line: the command line wins over a setting that
turns the switch on (``--no-once`` beside ``THIRTEEN_WITNESS_ONCE=1``)."""
SECRET_WORDS = ("password", "secret", "token")
"""A setting whose name holds one of these is left out of the logged configuration."""
STORE_SETTINGS = (
    "THIRTEEN_STORE",
    "POSTGRES_HOST",
    "POSTGRES_PORT",
    "POSTGRES_USER",
    "POSTGRES_DBNAME",
    "POSTGRES_SCHEMA",
)
"""The store's own variables (``service.eventstore.storage``), logged beside the flags; the
password never."""


def enable(parser: argparse.ArgumentParser, command: str) -> None:
    """Give a configured command ``--config`` (its settings are read when its parser parses:
    ``service.entrypoints.options.Parser``)."""
    parser.add_argument(
        "--config",
        type=Path,
        metavar="FILE",
        help=f"read flags from the [{command}] table of this TOML file (a flag given here "
        f"or a {env_name(command, 'flag')} variable wins); docs/operating/configure.md",
    )
    for flag, action in settable(parser).items():
        if isinstance(action, argparse._StoreTrueAction):  # a setting that turns it on
            parser.add_argument(
                f"{NEGATED}{flag}",
                dest=action.dest,
                action="store_false",
                default=argparse.SUPPRESS,
                help=f"--{flag} off, where a variable or the file turns it on",
            )


def settable(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    """The flags a command's settings can give, by name without the dashes (``max-in-flight``):
    every optional flag but ``--help`` and ``--config`` that stores a value, a switch or a list
    (a test checks that is every flag of the configured commands)."""
    flags: dict[str, argparse.Action] = {}
    for action in parser._actions:
        long = [name for name in action.option_strings if name.startswith("--")]
        if long and long[0] not in ("--help", "--config") and isinstance(action, KINDS):
            flags[long[0][2:]] = action
    return flags


def env_name(command: str, flag: str) -> str:
    """``THIRTEEN_SERVE_MAX_IN_FLIGHT`` for ``serve --max-in-flight``."""
    return f"{PREFIX}{command}_{flag}".upper().replace("-", "_")


class Refused(ValueError):
    """A setting that cannot be used; the message is the one line to print."""


@dataclass(frozen=True)
class Setting:
    flag: str
    raw: object
    source: str  # "THIRTEEN_SERVE_ADDRESS" or "FILE [serve] address"
    level: int  # 1 the environment, 0 the file


def parse_known_args(
    parser: argparse.ArgumentParser,
    command: str,
    parse: Callable[[Sequence[str], argparse.Namespace], tuple[argparse.Namespace, list[str]]],
    argv: Sequence[str],
) -> tuple[argparse.Namespace, list[str]]:
    """``parse(argv)`` with the command's settings under the flags given in ``argv``."""
    flags = settable(parser)
    try:
        settings = _settings(command, flags, argv, os.environ)
        values = {name: _value(flags[name], setting) for name, setting in settings.items()}
    except Refused as refused:
        parser.error(str(refused))
    for name in values:
        flags[name].required = False
    namespace = _Recording(given=set(), watched={flags[name].dest for name in values})
    for name, value in values.items():
        setattr(namespace, flags[name].dest, value)
    namespace.watched_done()
    parsed, extras = parse(argv, namespace)
    sources = {name: "flag" for name, action in flags.items() if action.dest in namespace.given}
    for name, action in flags.items():  # given on the command line, with no setting beneath
        if name not in values and getattr(parsed, action.dest) not in (None, action.default, []):
            sources[name] = "flag"
    for name, value in values.items():
        action = flags[name]
        if name in sources and isinstance(action, argparse._AppendAction):
            # The flags given replace the setting's list (appended to it by argparse).
            assert isinstance(value, list)
            setattr(parsed, action.dest, getattr(parsed, action.dest)[len(value) :])
        elif name not in sources:
            sources[name] = settings[name].source
    _one_of_each_group(parser, flags, parsed, sources, settings)
    result = argparse.Namespace(**vars(parsed))
    result.configuration = Configuration(command, flags, sources)
    return result, extras


class _Recording(argparse.Namespace):
    """A namespace that notes which of the settings' destinations the command line set."""

    __slots__ = ("given", "started", "watched")

    def __init__(self, given: set[str], watched: set[str]) -> None:
        super().__init__()
        object.__setattr__(self, "given", given)
        object.__setattr__(self, "watched", watched)
        object.__setattr__(self, "started", False)

    def watched_done(self) -> None:
        object.__setattr__(self, "started", True)

    def __setattr__(self, name: str, value: Any) -> None:
        if self.started and name in self.watched:
            self.given.add(name)
        super().__setattr__(name, value)


def _settings(
    command: str,
    flags: Mapping[str, argparse.Action],
    argv: Sequence[str],
    environ: Mapping[str, str],
) -> dict[str, Setting]:
    """Each flag's setting from the environment, else from the file."""
    known = {env_name(command, name): name for name in flags}
    config_variable = env_name(command, "config")
    found: dict[str, Setting] = {}
    for variable in sorted(environ):
        if not variable.startswith(env_name(command, "")) or variable == config_variable:
            continue
        if variable not in known:
            raise Refused(
                f"{variable} is not a setting of thirteen {command} (its variables are "
                f"{env_name(command, 'FLAG')}, one for each flag of --help)"
            )
        found[known[variable]] = Setting(known[variable], environ[variable], variable, 1)
    pre = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    pre.add_argument("--config")
    given, _ = pre.parse_known_args(list(argv))
    file = given.config if given.config is not None else environ.get(config_variable)
    if file is None:
        return found
    for name, raw in _table(command, Path(file)).items():
        if name not in flags:
            raise Refused(
                f"{file} [{command}]: unknown key {name!r} (the keys are the flags of "
                f"`thirteen {command} --help` without their dashes)"
            )
        found.setdefault(name, Setting(name, raw, f"{file} [{command}] {name}", 0))
    return found


def _table(command: str, file: Path) -> dict[str, object]:
    """The ``[command]`` table of the TOML ``file``; refused if the file cannot be read, is not
    TOML, or holds anything but the configured commands' tables."""
    from service.small_files import read_text

    text = read_text(file, "config file", Refused, not_text="is not UTF-8 text")
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise Refused(f"config file {file} is not TOML: {error}") from None
    for key, value in document.items():
        if key not in CONFIGURED or not isinstance(value, dict):
            raise Refused(
                f"config file {file}: unknown top-level key {key!r} (it holds the tables "
                f"{', '.join(f'[{name}]' for name in CONFIGURED)})"
            )
    table = document.get(command, {})
    assert isinstance(table, dict)
    return table


def _value(action: argparse.Action, setting: Setting) -> object:
    """The setting's value as the flag's own type reads it; ``Refused`` naming its source."""
    raw = setting.raw
    where = setting.source
    if isinstance(action, argparse._StoreTrueAction):
        if isinstance(raw, bool):
            return raw
        if isinstance(raw, str) and raw.strip().lower() in TRUE + FALSE:
            return raw.strip().lower() in TRUE
        raise Refused(f"{where} must be true or false, got {_shown(raw)}")
    if isinstance(action, argparse._AppendAction):
        items: Iterable[object]
        if isinstance(raw, str):
            items = [item.strip() for item in raw.split(",") if item.strip()]
        elif isinstance(raw, list):
            items = raw
        else:
            raise Refused(f"{where} must be a list, got {_shown(raw)}")
        return [_one(action, item, setting) for item in items]
    return _one(action, raw, setting)


def _one(action: argparse.Action, raw: object, setting: Setting) -> object:
    if isinstance(raw, bool) or not isinstance(raw, str | int | float):
        raise Refused(f"{setting.source} must be a string or a number, got {_shown(raw)}")
    text = str(raw)
    try:
        value = text if action.type is None else action.type(text)  # type: ignore[operator]
    except argparse.ArgumentTypeError as error:
        raise Refused(f"{setting.source}: {error}") from None
    except (TypeError, ValueError):
        raise Refused(f"{setting.source}: invalid value {_shown(text)}") from None
    if action.choices is not None and value not in action.choices:
        listed = ", ".join(map(str, action.choices))
        raise Refused(f"{setting.source} must be one of {listed}, got {text!r}")
    return value


def _shown(raw: object) -> str:
    return repr(raw)[:60]


def _one_of_each_group(
    parser: argparse.ArgumentParser,
    flags: Mapping[str, argparse.Action],
    parsed: argparse.Namespace,
    sources: dict[str, str],
    settings: Mapping[str, Setting],
) -> None:
    """Of flags that exclude each other, the one set in the strongest place wins over the
    others (the command line over a variable over the file); two set in the same place are
    refused."""
    names = {action: name for name, action in flags.items()}

    def rank(name: str) -> int:
        return 2 if sources[name] == "flag" else settings[name].level

    for group in parser._mutually_exclusive_groups:
        members = [names[action] for action in group._group_actions if action in names]
        set_ = [name for name in members if name in sources]
        if not set_:
            continue
        strongest = max(rank(name) for name in set_)
        winners = [name for name in set_ if rank(name) == strongest]
        if len(winners) > 1:
            parser.error(
                f"{sources[winners[0]]} and {sources[winners[1]]} exclude each other: give one "
                "of them"
            )
        for name in set_:
            if name not in winners:
                setattr(parsed, flags[name].dest, flags[name].default)
                del sources[name]


@dataclass(frozen=True)
class Configuration:
    """What a command runs with: each flag's value and where it came from."""

    command: str
    flags: Mapping[str, argparse.Action]
    sources: Mapping[str, str]

    def effective(self, args: argparse.Namespace) -> dict[str, object]:
        """Every flag's value (a path or list as text), and the store's variables; secrets
        left out."""
        shown: dict[str, object] = {}
        for name, action in self.flags.items():
            if any(word in name for word in SECRET_WORDS):
                continue
            value = getattr(args, action.dest)
            shown[name] = (
                [_without_userinfo(str(v)) for v in value]
                if isinstance(value, list)
                else _plain(value)
            )
        if self.command in ("serve", "worker"):
            for variable in STORE_SETTINGS:
                if variable in os.environ:
                    shown[variable] = os.environ[variable]
        return shown


def _plain(value: object) -> object:
    if value is None or isinstance(value, bool | int | float):
        return value
    return _without_userinfo(str(value))


USERINFO = re.compile(r"(?<=//)[^/@\s]*@")
"""The ``user:password@`` of an address (``https://alice:pw@host:4317``)."""


def _without_userinfo(text: str) -> str:
    """``text`` with any address's credentials left out (``https://***@host:4317``)."""
    return USERINFO.sub("***@", text)


def log_effective(args: argparse.Namespace) -> None:
    """One log line at start: the effective configuration and where each setting came from
    (``flag``, a variable, the file; the rest are defaults); secrets left out."""
    import structlog

    configuration = getattr(args, "configuration", None)
    if not isinstance(configuration, Configuration):
        return
    structlog.get_logger(f"thirteen.{configuration.command}").info(
        "configuration",
        command=configuration.command,
        settings=configuration.effective(args),
        set_by=dict(configuration.sources),
    )


def version() -> str:
    """The installed package's version (``thirteen --version``)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("thirteen")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown"
