"""The long-running commands' flags from ``THIRTEEN_<COMMAND>_<FLAG>`` variables and a TOML file
(``--config``), flag > environment > file > default (issue 23; docs/operating/configure.md)."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest

from service.entrypoints.cli import build_parser
from service.entrypoints.configuring import CONFIGURED, NEGATED, env_name, settable
from tests.support.cli import thirteen
from tests.support.serve_process import SQLITE, ServeProcess

DOC = Path(__file__).resolve().parents[2] / "docs" / "operating" / "configure.md"


def assert_one_line(stderr: str) -> None:
    assert stderr.count("\n") == 1 and "Traceback" not in stderr, stderr


def _commands() -> dict[str, object]:
    parser = build_parser()
    action = next(a for a in parser._actions if a.dest == "command")
    return dict(action.choices)  # type: ignore[arg-type]


@pytest.mark.parametrize("command", CONFIGURED)
def test_every_flag_has_a_variable_and_a_key_and_both_are_documented(command: str) -> None:
    parser = _commands()[command]
    flags = [
        name[2:]
        for action in parser._actions  # type: ignore[attr-defined]
        for name in action.option_strings[:2]
        if name.startswith("--")
        and name not in ("--help", "--config")
        and not name.startswith(NEGATED)
    ]
    known = settable(parser)  # type: ignore[arg-type]
    assert sorted(flags) == sorted(known), "a flag no setting can give"
    documented = DOC.read_text()
    for flag in flags:
        assert f"`{env_name(command, flag)}`" in documented, env_name(command, flag)
        assert f"`{flag}`" in documented, f"[{command}] {flag}"


def logged_configuration(lines: list[str]) -> dict[str, object]:
    """The ``configuration`` event a command logged at start (JSON log lines)."""
    for line in lines:
        if line.startswith("{") and '"configuration"' in line:
            found: dict[str, object] = json.loads(line)
            return found
    raise AssertionError("no configuration logged:\n" + "".join(lines[-10:]))


def test_a_flag_wins_over_the_environment_which_wins_over_the_file(tmp_path: Path) -> None:
    config = tmp_path / "thirteen.toml"
    config.write_text(
        '[serve]\nlog-level = "error"\nmax-in-flight = 9\ncheckpoint-interval = 3\n'
        'witness-key = []\n[console]\nlisten = "127.0.0.1:0"\n'
    )
    environ = {
        **SQLITE,
        "THIRTEEN_SERVE_LOG_LEVEL": "warning",
        "THIRTEEN_SERVE_MAX_IN_FLIGHT": "7",
        "POSTGRES_PASSWORD": "hunter2",
    }
    server = ServeProcess(
        tmp_path / "data", "--config", str(config), "--log-level", "info", environ=environ
    )
    try:
        logged = logged_configuration(server.lines)
    finally:
        server.stop()
    settings = logged["settings"]
    assert isinstance(settings, dict)
    assert settings["log-level"] == "info"  # the flag over the variable and the file
    assert settings["max-in-flight"] == 7  # the variable over the file
    assert settings["checkpoint-interval"] == 3.0  # the file over the default
    assert settings["metrics"] is None  # the default
    assert logged["set_by"] == {
        "address": "flag",
        "data": "flag",
        "log-level": "flag",
        "max-in-flight": "THIRTEEN_SERVE_MAX_IN_FLIGHT",
        "checkpoint-interval": f"{config} [serve] checkpoint-interval",
        "witness-key": f"{config} [serve] witness-key",
    }
    assert not any("hunter2" in line for line in server.lines)


def test_the_config_file_can_be_named_by_its_variable(tmp_path: Path) -> None:
    config = tmp_path / "thirteen.toml"
    config.write_text("[serve]\nmax-in-flight = 5\n")
    environ = {**SQLITE, "THIRTEEN_SERVE_CONFIG": str(config)}
    server = ServeProcess(tmp_path / "data", environ=environ)
    try:
        settings = logged_configuration(server.lines)["settings"]
    finally:
        server.stop()
    assert isinstance(settings, dict) and settings["max-in-flight"] == 5


@pytest.mark.parametrize(
    ("environ", "toml", "expected"),
    [
        ({"THIRTEEN_SERVE_ADRESS": "127.0.0.1:0"}, None, "THIRTEEN_SERVE_ADRESS is not a setting"),
        ({"THIRTEEN_SERVE_MAX_IN_FLIGHT": "0"}, None, "THIRTEEN_SERVE_MAX_IN_FLIGHT: --max-in"),
        ({"THIRTEEN_SERVE_INSECURE": "maybe"}, None, "must be true or false, got 'maybe'"),
        ({"THIRTEEN_SERVE_BACKGROUND": "cloud"}, None, "must be one of here, worker"),
        ({}, "[serve]\nadress = 'x'\n", "unknown key 'adress'"),
        ({}, "[sevre]\naddress = 'x'\n", "unknown top-level key 'sevre'"),
        ({}, "[serve]\naddress = 50051\n", "address must be HOST:PORT, got '50051'"),
        ({}, "[serve]\ninsecure = 'yes please'\n", "must be true or false"),
        ({}, "[serve]\naddress = [1]\n", "must be a string or a number"),
        ({}, "[serve\n", "is not TOML"),
        ({}, "[serve]\npeers = 'a:1'\npeers-file = 'f'\n", "exclude each other"),
    ],
)
def test_a_bad_setting_is_one_line_and_exit_2_before_anything_is_created(
    tmp_path: Path, environ: dict[str, str], toml: str | None, expected: str
) -> None:
    extra: list[str] = []
    if toml is not None:
        (tmp_path / "c.toml").write_text(toml)
        extra = ["--config", str(tmp_path / "c.toml")]
    data = tmp_path / "data"
    result = thirteen("serve", "--address", "127.0.0.1:0", "--data", data, *extra, env=environ)
    assert result.returncode == 2, result.stderr
    assert_one_line(result.stderr)
    assert expected in result.stderr
    assert not data.exists()


def test_a_missing_config_file_is_one_line(tmp_path: Path) -> None:
    result = thirteen("console", "--config", tmp_path / "nope.toml")
    assert result.returncode == 2
    assert_one_line(result.stderr)
    assert "cannot read config file" in result.stderr


def test_a_required_flag_can_come_from_the_environment(tmp_path: Path) -> None:
    # witness --log is required on the command line unless a setting gives it.
    result = thirteen(
        "witness",
        "--log-public-key",
        "not-a-key",
        "--key",
        tmp_path / "k",
        "--state",
        tmp_path / "s",
        "--once",
        env={"THIRTEEN_WITNESS_LOG": "127.0.0.1:1"},
    )
    assert result.returncode == 2
    assert "required" not in result.stderr
    assert "not-a-key" in result.stderr  # got as far as reading the log's key


def test_a_flag_given_replaces_a_setting_that_excludes_it(tmp_path: Path) -> None:
    args = build_parser().parse_args(["serve", "--peers", "a:1"])
    assert args.peers == "a:1" and args.peers_file is None
    args = build_parser().parse_args(
        ["serve", "--config", str(_file(tmp_path, "[serve]\npeers-file = 'f'\n")), "--peers", "a:1"]
    )
    assert args.peers == "a:1" and args.peers_file is None


def test_repeated_flags_replace_the_settings_list(tmp_path: Path) -> None:
    config = _file(tmp_path, "[serve]\nwitness-key = ['a', 'b']\n")
    args = build_parser().parse_args(["serve", "--config", str(config)])
    assert args.witness_key == ["a", "b"]
    args = build_parser().parse_args(["serve", "--config", str(config), "--witness-key", "c"])
    assert args.witness_key == ["c"]


def test_a_switch_a_setting_turns_on_is_turned_off_by_its_no_flag(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The command line wins over a setting for switches too: ``--no-once`` beside
    ``THIRTEEN_WITNESS_ONCE=1`` (a switch could not be turned off there before)."""
    required = ["--log", "h:1", "--log-public-key", "k", "--key", "k", "--state", "s"]
    assert build_parser().parse_args(["witness", *required]).once is False
    monkeypatch.setenv("THIRTEEN_WITNESS_ONCE", "1")
    assert build_parser().parse_args(["witness", *required]).once is True
    assert build_parser().parse_args(["witness", *required, "--no-once"]).once is False
    monkeypatch.delenv("THIRTEEN_WITNESS_ONCE")
    config = _file(tmp_path, "[witness]\nonce = true\n")
    with_file = ["witness", "--config", str(config), *required]
    assert build_parser().parse_args(with_file).once is True
    assert build_parser().parse_args([*with_file, "--no-once"]).once is False
    turned_off = build_parser().parse_args([*with_file, "--no-once"])
    assert turned_off.configuration.sources["once"] == "flag"  # logged as the command line's
    assert turned_off.configuration.effective(turned_off)["once"] is False


def _file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "c.toml"
    path.write_text(text)
    return path


def test_the_documented_example_loads(tmp_path: Path) -> None:
    blocks = re.findall(r"```toml\n(.*?)```", DOC.read_text(), flags=re.S)
    assert blocks, "configure.md has no TOML example"
    config = _file(tmp_path, blocks[0])
    document = tomllib.loads(blocks[0])
    for command, table in document.items():
        args = build_parser().parse_args([command, "--config", str(config)])
        flags = settable(_commands()[command])  # type: ignore[arg-type]
        for key, value in table.items():
            got = getattr(args, flags[key].dest)
            assert str(got) == str(value) or got == value, (command, key, got, value)


def test_version_names_the_installed_package() -> None:
    result = thirteen("--version")
    assert result.returncode == 0
    assert re.fullmatch(r"thirteen \d+\.\d+\.\d+\S*\n", result.stdout)
