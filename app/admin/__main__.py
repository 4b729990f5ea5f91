"""The admin CLI: accounts, invite codes, backups. `python -m app.admin --help`.

It works on the database in SHARDLAB_DATA_DIR (or --data-dir), so in Docker run it inside
the app's container: `docker compose exec app python -m app.admin list-users`.
"""

from __future__ import annotations

import argparse
import getpass
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from sqlmodel import Session

from app.accounts.invites import MAX_DAYS, make_invite
from app.admin import service
from app.admin.backup import (
    BackupError,
    backup_database,
    default_backup_path,
    integrity_problem,
    restore_database,
)
from app.config import Settings
from app.db import make_engine, migrate


def _password(args: argparse.Namespace) -> str:
    if args.password_stdin:
        return sys.stdin.readline().rstrip("\n")
    first = getpass.getpass("Password (at least 8 characters): ")
    if getpass.getpass("Same password again: ") != first:
        raise service.AdminError("the two passwords differ")
    return first


def _with_session(settings: Settings, action: Callable[[Session], int]) -> int:
    # Brings a fresh data directory up to the schema, so the first admin can be made before
    # the app has ever started.
    migrate(settings.database_path)
    engine = make_engine(settings.database_url)
    try:
        with Session(engine) as session:
            return action(session)
    finally:
        engine.dispose()


def cmd_create_user(args: argparse.Namespace, settings: Settings) -> int:
    password = _password(args)

    def action(session: Session) -> int:
        user = service.create_user(session, args.username, password, is_admin=args.admin)
        role = "admin" if user.is_admin else "user"
        print(f"created {role} {user.username} (id {user.id})")
        return 0

    return _with_session(settings, action)


def cmd_create_admin(args: argparse.Namespace, settings: Settings) -> int:
    args.admin = True
    return cmd_create_user(args, settings)


def _set_flag(flag: str, value: bool) -> Callable[[argparse.Namespace, Settings], int]:
    def command(args: argparse.Namespace, settings: Settings) -> int:
        def action(session: Session) -> int:
            user = service.find_user(session, args.username)
            if flag == "disabled":
                service.set_disabled(session, user, value)
                print(f"{user.username}: {'disabled' if value else 'enabled'}")
            else:
                service.set_admin(session, user, value)
                print(f"{user.username}: {'admin' if value else 'not an admin'}")
            return 0

        return _with_session(settings, action)

    return command


def cmd_reset_password(args: argparse.Namespace, settings: Settings) -> int:
    password = _password(args)

    def action(session: Session) -> int:
        user = service.reset_password(session, service.find_user(session, args.username), password)
        print(f"{user.username}: password changed")
        return 0

    return _with_session(settings, action)


def cmd_list_users(args: argparse.Namespace, settings: Settings) -> int:
    def action(session: Session) -> int:
        users = service.all_users(session)
        rows = [
            {
                "id": u.id,
                "username": u.username,
                "admin": u.is_admin,
                "disabled": u.disabled,
                "created_at": u.created_at.isoformat(timespec="seconds"),
            }
            for u in users
        ]
        if args.json:
            print(json.dumps(rows, indent=2))
            return 0
        print(f"{'id':>4}  {'username':<40} {'admin':<5} {'disabled':<8} created")
        for r in rows:
            print(
                f"{r['id']:>4}  {r['username']:<40} {'yes' if r['admin'] else '':<5} "
                f"{'yes' if r['disabled'] else '':<8} {r['created_at']}"
            )
        return 0

    return _with_session(settings, action)


def cmd_invite(args: argparse.Namespace, settings: Settings) -> int:
    code, expires = make_invite(settings.session_secret, args.days)
    print(code)
    base = args.base_url.rstrip("/")
    print(f"valid until {expires:%Y-%m-%d %H:%M} UTC; link: {base}/register?invite={code}")
    if settings.registration != "invite":
        print(
            f"note: registration is {settings.registration!r}; invite codes are asked for "
            "only when SHARDLAB_REGISTRATION=invite",
            file=sys.stderr,
        )
    return 0


def cmd_backup(args: argparse.Namespace, settings: Settings) -> int:
    destination = args.destination or default_backup_path(settings.data_dir)
    path = backup_database(settings.database_path, destination)
    print(f"backed up to {path} ({path.stat().st_size} bytes, integrity check ok)")
    return 0


def cmd_restore(args: argparse.Namespace, settings: Settings) -> int:
    if not args.yes:
        answer = input(f"Replace {settings.database_path} with {args.backup}? Type yes: ")
        if answer.strip() != "yes":
            print("nothing restored")
            return 1
    restore_database(args.backup, settings.database_path, settings.data_dir)
    # An older backup is brought up to this version's schema, as the app would at start.
    migrate(settings.database_path)
    print(f"restored {settings.database_path} from {args.backup}; start the app again")
    return 0


def cmd_check(args: argparse.Namespace, settings: Settings) -> int:
    path = args.path or settings.database_path
    problem = integrity_problem(path)
    if problem:
        raise BackupError(problem)
    print(f"{path}: integrity check ok")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m app.admin",
        description="Run a ShardLab server: accounts, invite codes, database backups.",
    )
    parser.add_argument(
        "--data-dir", type=Path, help="the data directory (default: SHARDLAB_DATA_DIR or ./data)"
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name: str, handler: Callable, help_: str) -> argparse.ArgumentParser:
        cmd = sub.add_parser(name, help=help_, description=help_)
        cmd.set_defaults(handler=handler)
        return cmd

    def with_password(cmd: argparse.ArgumentParser) -> None:
        cmd.add_argument(
            "--password-stdin",
            action="store_true",
            help="read the password from the first line of stdin instead of prompting",
        )

    cmd = add("create-admin", cmd_create_admin, "create an admin account (the first one, say)")
    cmd.add_argument("username")
    with_password(cmd)
    cmd = add("create-user", cmd_create_user, "create an account")
    cmd.add_argument("username")
    cmd.add_argument("--admin", action="store_true", help="make it an admin")
    with_password(cmd)
    for name, flag, value, text in (
        ("disable", "disabled", True, "stop a user logging in; their sessions end at once"),
        ("enable", "disabled", False, "let a disabled user log in again"),
        ("make-admin", "admin", True, "give a user the admin page"),
        ("revoke-admin", "admin", False, "take the admin page away from a user"),
    ):
        add(name, _set_flag(flag, value), text).add_argument("username")
    cmd = add("reset-password", cmd_reset_password, "set a new password for a user")
    cmd.add_argument("username")
    with_password(cmd)
    cmd = add("list-users", cmd_list_users, "list every account")
    cmd.add_argument("--json", action="store_true", help="print JSON")
    cmd = add("invite", cmd_invite, "print a new invite code (for SHARDLAB_REGISTRATION=invite)")
    cmd.add_argument(
        "--days", type=int, default=7, help=f"days it stays valid, 1 to {MAX_DAYS} (default 7)"
    )
    cmd.add_argument(
        "--base-url", default="http://127.0.0.1:8000", help="the server's address, for the link"
    )
    cmd = add(
        "backup",
        cmd_backup,
        "copy the database while the app runs (SQLite backup API), then check the copy",
    )
    cmd.add_argument(
        "destination",
        nargs="?",
        type=Path,
        help="the new file (default: DATA_DIR/backups/shardlab-<UTC time>.db)",
    )
    cmd = add(
        "restore", cmd_restore, "replace the database with a checked backup; stop the app first"
    )
    cmd.add_argument("backup", type=Path)
    cmd.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    cmd = add("check", cmd_check, "run SQLite's integrity check on the database or a backup")
    cmd.add_argument("path", nargs="?", type=Path, help="a file (default: the live database)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    settings = Settings(data_dir=args.data_dir) if args.data_dir else Settings()
    try:
        return args.handler(args, settings)
    except (service.AdminError, BackupError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
