"""Command line: ``minibroker serve config/server.properties --override key=value ...``.

Also runnable as ``python -m broker serve ...``. Mirrors Kafka's
``kafka-server-start.sh server.properties --override k=v``: the file gives the
configuration (read as Kafka reads it, ``properties.py``), each ``--override``
replaces one key (split at its first ``=``, nothing unescaped, as Kafka's
command line splits it). A bad or unknown key stops
startup with a message naming it and exit status 1 (as Kafka.main exits on a
ConfigException; a command line it cannot parse gets its usage and status 1
too, as kafka-server-start.sh), and so does a JWKS endpoint (signed OAUTHBEARER tokens) that
cannot be read when the broker starts.
Log dirs the broker cannot run on (every one failed, or the first, which
holds the metadata), at start or later, stop it with status 1, as Kafka halts;
so does a log dir another broker process holds (its ``.lock``), and an empty
``log.dirs`` or a dir given twice is a configuration error.
SIGTERM, SIGINT and SIGHUP shut the broker down gracefully: connections are closed, logs flushed and
the clean-shutdown marker written, so the next start skips recovery; a signal repeated meanwhile does
not cut that short, and the status is 0 (``lifecycle.py``, which also logs Kafka's start and stop
lines). A listener or the metrics endpoint that cannot be bound ends the start with one line naming
it, status 1. ``--version`` prints the package's version. The soft
open-files limit is raised to the hard one first (``limits``), as the JVM does
for Kafka.

``--add-scram 'SCRAM-SHA-256=[name=alice,password=alice-secret]'`` (repeatable,
also ``-S``) gives a user a SCRAM credential before the listeners open, as
``kafka-storage format --add-scram`` does (``scram_store.py``): the way to
have a first SCRAM user in a docker-compose setup with no admin connection
yet. A user who already has that mechanism's credential keeps it.

SASL listeners may take their JAAS entries from a static JAAS file, named as
Kafka's JVM gets it: ``KAFKA_OPTS="-Djava.security.auth.login.config=/etc/kafka/kafka_server_jaas.conf"``
in the environment (``jaas_file.py``), with or without ``--kafka-env``.

``--kafka-env`` reads ``KAFKA_*`` environment variables (and ``CLUSTER_ID``)
as the apache/kafka docker image does (``env_config.py``); the image of this
broker passes it, so a compose file written for that image works here. The
image's directories can be moved: ``--secrets-dir`` (``/etc/kafka/secrets``,
where the SSL helper variables name files) and ``--mounted-configs-dir``
(``/mnt/shared/config``, where a ``server.properties`` replaces the file given).
A variable or file the image's scripts require that is missing stops the
start with their message and exit status 1. The root log level is
``--log-level`` if given, else ``KAFKA_LOG4J_ROOT_LOGLEVEL`` (with
``--kafka-env``), else INFO; ``KAFKA_LOG4J_LOGGERS`` sets other loggers'.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import logging
import os
import re
import sys

import trio

from protocol.records import set_accelerated

from .config import BrokerConfig, ConfigError
from .env_config import MOUNTED_CONFIGS_DIR, PREFIX, format_cluster_id, image_config, key_of
from .env_logging import LogSettings, level_of, log_settings
from .env_ssl import SECRETS_DIR, ImageScriptError
from .jaas_file import JaasFile
from .lifecycle import BindError, StopSignals, log_started, log_starting, log_stopped, log_stopping
from .limits import raise_open_files_limit
from .memory import freeze_startup_heap, tune_allocator
from .properties import parse_override
from .scram_store import CredentialFileError, parse_add_scram


class _Parser(argparse.ArgumentParser):
    """A usage error prints the usage and exits with status 1, as ``kafka-server-start.sh`` without its
    properties file and Kafka's ``CommandLineUtils.printUsageAndExit`` do (argparse's own status is 2)."""

    def error(self, message: str):
        self.print_usage(sys.stderr)
        self.exit(1, f"{self.prog}: error: {message}\n")


def _parse_args(argv: list[str]) -> argparse.Namespace:
    parser = _Parser(prog="minibroker", description="A Kafka-compatible broker on trio.")
    parser.add_argument("--version", action="version", version=_version(), help="print the version and exit")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run the broker")
    serve.add_argument("--version", action="version", version=_version(), help="print the version and exit")
    serve.add_argument("config", help="path to server.properties")
    serve.add_argument("--override", action="append", default=[], metavar="KEY=VALUE")
    serve.add_argument("--add-scram", "-S", action="append", default=[], metavar="MECHANISM=[name=...,password=...]",
                       help="add a user's SCRAM credential if it has none (kafka-storage format --add-scram)")
    serve.add_argument("--kafka-env", action="store_true",
                       help="read KAFKA_* environment variables and CLUSTER_ID as the apache/kafka image does")
    serve.add_argument("--secrets-dir", default=SECRETS_DIR,
                       help="with --kafka-env: where KAFKA_SSL_KEYSTORE_FILENAME ... name files")
    serve.add_argument("--mounted-configs-dir", default=MOUNTED_CONFIGS_DIR,
                       help="with --kafka-env: a server.properties here replaces the config file")
    serve.add_argument("--log-level", default=None, help="root log level (default: INFO)")
    return parser.parse_args(argv)


def _version() -> str:
    """This package's version, from its installed metadata (what ``kafka-server-start.sh --version`` prints)."""
    try:
        return importlib.metadata.version("minibroker")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def _overrides(pairs: list[str]) -> dict[str, str]:
    """Each ``--override`` as Kafka's ``kafka-server-start.sh`` takes it: split at the first ``=``, as given."""
    return dict(map(parse_override, pairs))


def _load_config(args: argparse.Namespace) -> BrokerConfig:
    """The properties file, then the ``KAFKA_*`` variables (``--kafka-env``), then each ``--override``."""
    path, from_env, dropped = args.config, {}, frozenset()
    if args.kafka_env:
        path, from_env, dropped = image_config(args.config, os.environ, args.secrets_dir, args.mounted_configs_dir)
    jaas_file = JaasFile.from_kafka_opts(os.environ.get("KAFKA_OPTS"))  # what kafka-server-start.sh gives the JVM
    try:
        config = BrokerConfig.load(path, {**from_env, **_overrides(args.override)}, dropped, jaas_file)
    except ConfigError as exc:
        key = _key_of(exc)
        variable = next((n for n in os.environ if n.startswith(PREFIX) and key_of(n) == key), None)
        if key in from_env and variable:
            raise ConfigError(f"{exc} (set by {variable})") from None
        raise
    if args.kafka_env:
        format_cluster_id(config.log_dir_list()[0], os.environ.get("CLUSTER_ID"))
    return config


def _key_of(exc: ConfigError) -> str:
    """The key a refusal is about: its own, else the one Kafka's wording names, else its text's first word."""
    named = re.search(r" for configuration (\S+): ", str(exc))
    return exc.key or (named.group(1) if named else str(exc).partition(":")[0])


def _set_up_logging(args: argparse.Namespace) -> None:
    """Python's logging: the root level (``--log-level``, else the image's variable, else INFO) and the
    loggers ``KAFKA_LOG4J_LOGGERS`` names; ``ConfigError`` for a variable not understood."""
    settings = log_settings(os.environ) if args.kafka_env else LogSettings(None)
    root = level_of("--log-level", args.log_level) if args.log_level else settings.root
    root = logging.INFO if root is None else root
    logging.basicConfig(level=root, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    settings.apply()


def _scram_entries(arguments: list[str]) -> list:
    entries = []
    for argument in arguments:
        try:
            entries.append(parse_add_scram(argument))
        except ConfigError as exc:
            raise ConfigError(f"--add-scram {argument!r}: {exc}") from None
    return entries


async def _run(config, signals: StopSignals) -> None:
    """Serve until a stop signal (``lifecycle.StopSignals``), then stop gracefully."""
    with signals.receiving() as receiver:
        from .server import serve_broker

        log_starting(config)
        async with trio.open_nursery() as watching:
            started = trio.Event()
            async with trio.open_nursery() as nursery:
                stop = nursery.cancel_scope
                watching.start_soon(signals.watch, receiver, started, stop, lambda: log_stopping(config))
                broker = await nursery.start(serve_broker, config)
                freeze_startup_heap()
                log_started(broker)
                started.set()
            watching.cancel_scope.cancel()
    log_stopped(config)


def use_accelerator() -> bool:
    """The C accelerator of down-conversion, unless ``MINIBROKER_PURE_PYTHON=1``; True if it is in use."""
    accelerated = set_accelerated(os.environ.get("MINIBROKER_PURE_PYTHON") != "1")
    logging.getLogger("minibroker").info("down-conversion loop: %s", "C" if accelerated else "pure Python")
    return accelerated


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(sys.argv[1:] if argv is None else argv)
    try:
        _set_up_logging(args)
        config = _load_config(args)
        entries = _scram_entries(args.add_scram)
    except ImageScriptError as exc:  # as the image's configure script stops: its words, status 1
        print(exc, file=sys.stderr)
        return exc.exit_status
    except (ConfigError, OSError) as exc:
        print(f"minibroker: configuration error: {exc}", file=sys.stderr)
        return 1
    config.add_scram = entries  # added by the broker once its log dirs are validated and locked
    tune_allocator()
    use_accelerator()
    was, now = raise_open_files_limit()
    logging.getLogger("minibroker").info("open files limit: %d (was %d)", now, was)
    signals = StopSignals()
    signals.install()  # from here on, TERM, INT and HUP stop the broker gracefully (``lifecycle``)
    try:
        trio.run(_run, config, signals)
    except BaseException as exc:  # a JWKS endpoint that cannot be read stops the start, as a bad key does
        return _failed_run(exc)
    return 0


def _failed_run(exc: BaseException) -> int:
    """The exit status of a run that ``exc`` ended, or ``exc`` raised again if it is none we expect."""
    from storage import LogDirInUse, LogDirsFailed

    cause = _cause(exc)
    if isinstance(cause, LogDirsFailed):  # already logged, as Kafka's fatal; Kafka halts with status 1
        return 1
    if isinstance(cause, BindError):  # as Kafka's socket server failing to bind: one line, status 1
        logging.getLogger("minibroker").error("%s", cause)
        return 1
    if isinstance(cause, ConfigError):
        print(f"minibroker: configuration error: {cause}", file=sys.stderr)
        return 1
    if isinstance(cause, (CredentialFileError, LogDirInUse)):  # a dir's .lock taken: status 1, as Kafka exits
        print(f"minibroker: {cause}", file=sys.stderr)
        return 1
    raise exc


def _cause(exc: BaseException) -> BaseException:
    """The one exception that ended the run (trio wraps it in exception groups)."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


if __name__ == "__main__":
    sys.exit(main())
