"""The admin CLI: accounts, invite codes, backups. `python -m app.admin --help`.

It works on the app's database: SHARDLAB_DATABASE_URL (PostgreSQL) where it is set, else the
SQLite file in SHARDLAB_DATA_DIR (or --data-dir). In Docker run it inside the app's container,
which has both settings: `docker compose exec app python -m app.admin list-users`.
"""

from __future__ import annotations

import argparse
import getpass
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from sqlalchemy.engine import make_url
from sqlmodel import Session

from app.accounts import invites
from app.accounts.invites import MAX_DAYS, MAX_USES
from app.admin import service
from app.admin.backup import (
    BackupError,
    backup_database,
    database_problem,
    default_backup_path,
    integrity_problem,
    restore_database,
)
from app.admin.repair import repair_progress, report
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
    migrate(settings.database_url)
    engine = make_engine(settings.database_url)
    try:
        with Session(engine) as session:
            return action(session)
    finally:
        engine.dispose()


def _print_rows(
    rows: list[dict[str, Any]], as_json: bool, header: str, line: Callable[[dict[str, Any]], str]
) -> int:
    """--json prints the rows as they are, for scripts; otherwise a header and a line each."""
    if as_json:
        print(json.dumps(rows, indent=2))
        return 0
    print(header)
    for r in rows:
        print(line(r))
    return 0


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
        header = f"{'id':>4}  {'username':<40} {'admin':<5} {'disabled':<8} created"

        def line(r: dict[str, Any]) -> str:
            return (
                f"{r['id']:>4}  {r['username']:<40} {'yes' if r['admin'] else '':<5} "
                f"{'yes' if r['disabled'] else '':<8} {r['created_at']}"
            )

        return _print_rows(rows, args.json, header, line)

    return _with_session(settings, action)


def cmd_create_invite(args: argparse.Namespace, settings: Settings) -> int:
    def action(session: Session) -> int:
        # No web user is behind a CLI invite: created_by stays empty and lists as "CLI".
        invite = invites.make_invite(session, None, args.days, args.uses)
        print(invite.code)
        base = args.base_url.rstrip("/")
        print(
            f"valid until {invite.expires_at:%Y-%m-%d %H:%M} UTC for {invite.max_uses} "
            f"account(s); link: {base}/register?invite={invite.code}"
        )
        return 0

    if settings.registration != "invite":
        print(
            f"note: registration is {settings.registration!r}; invite codes are asked for "
            "only when SHARDLAB_REGISTRATION=invite",
            file=sys.stderr,
        )
    return _with_session(settings, action)


def cmd_list_invites(args: argparse.Namespace, settings: Settings) -> int:
    def action(session: Session) -> int:
        rows = [
            {
                "id": i.invite.id,
                "code": i.invite.code,
                "status": i.status,
                "uses": i.invite.uses,
                "max_uses": i.invite.max_uses,
                "made_by": i.made_by,
                "used_by": i.used_by,
                "created_at": i.invite.created_at.isoformat(timespec="seconds"),
                "expires_at": i.invite.expires_at.isoformat(timespec="seconds"),
                "revoked_at": i.invite.revoked_at and i.invite.revoked_at.isoformat("T", "seconds"),
            }
            for i in invites.list_invites(session)
        ]
        header = (
            f"{'id':>4}  {'code':<16}  {'status':<8} {'uses':>7}  {'expires (UTC)':<16}  used by"
        )

        def line(r: dict[str, Any]) -> str:
            return (
                f"{r['id']:>4}  {r['code']:<16}  {r['status']:<8} "
                f"{r['uses']:>3}/{r['max_uses']:<3}  {r['expires_at'][:16]:<16}  "
                f"{', '.join(r['used_by']) or '-'}"
            )

        return _print_rows(rows, args.json, header, line)

    return _with_session(settings, action)


def cmd_revoke_invite(args: argparse.Namespace, settings: Settings) -> int:
    def action(session: Session) -> int:
        invite = invites.revoke_invite(session, service.find_invite(session, args.code_or_id))
        print(f"invite {invite.id} ({invite.code}): revoked")
        return 0

    return _with_session(settings, action)


def _database_name(settings: Settings) -> str:
    """The database as the operator knows it, with no password."""
    if settings.database_kind == "sqlite":
        return str(settings.database_path)
    return make_url(settings.database_url).render_as_string(hide_password=True)


def cmd_backup(args: argparse.Namespace, settings: Settings) -> int:
    destination = args.destination or default_backup_path(settings.data_dir, settings.database_url)
    path = backup_database(settings.database_url, destination)
    print(f"backed up to {path} ({path.stat().st_size} bytes, integrity check ok)")
    return 0


def cmd_restore(args: argparse.Namespace, settings: Settings) -> int:
    if not args.yes:
        answer = input(f"Replace {_database_name(settings)} with {args.backup}? Type yes: ")
        if answer.strip() != "yes":
            print("nothing restored")
            return 1
    restore_database(args.backup, settings.database_url, settings.data_dir)
    # An older backup is brought up to this version's schema, as the app would at start.
    migrate(settings.database_url)
    print(f"restored {_database_name(settings)} from {args.backup}; start the app again")
    return 0


def cmd_check(args: argparse.Namespace, settings: Settings) -> int:
    if args.path:
        problem, name = integrity_problem(args.path), str(args.path)
    else:
        problem, name = database_problem(settings.database_url), _database_name(settings)
    if problem:
        raise BackupError(problem)
    print(f"{name}: integrity check ok")
    return 0


def cmd_repair_progress(args: argparse.Namespace, settings: Settings) -> int:
    def action(session: Session) -> int:
        mended = repair_progress(session, dry_run=args.dry_run)
        print("\n".join(report(session, mended, args.dry_run)))
        return 0

    return _with_session(settings, action)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m app.admin",
        description="Run a ShardLab server: accounts, invite codes, database backups.",
    )
    parser.add_argument(
        "--data-dir", type=Path, help="the data directory (default: SHARDLAB_DATA_DIR or ./data)"
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(
        name: str, handler: Callable, help_: str, aliases: Sequence[str] = ()
    ) -> argparse.ArgumentParser:
        cmd = sub.add_parser(name, help=help_, description=help_, aliases=list(aliases))
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
    cmd = add(
        "create-invite",
        cmd_create_invite,
        "make an invite code and print it with its link (for SHARDLAB_REGISTRATION=invite)",
        aliases=["invite"],  # its name before codes were stored
    )
    cmd.add_argument(
        "--days", type=int, default=7, help=f"days it stays valid, 1 to {MAX_DAYS} (default 7)"
    )
    cmd.add_argument(
        "--uses",
        type=int,
        default=1,
        help=f"accounts it can make, 1 to {MAX_USES} (default 1: single-use)",
    )
    cmd.add_argument(
        "--base-url", default="http://127.0.0.1:8000", help="the server's address, for the link"
    )
    cmd = add("list-invites", cmd_list_invites, "list every invite code, its status and users")
    cmd.add_argument("--json", action="store_true", help="print JSON")
    cmd = add("revoke-invite", cmd_revoke_invite, "stop an invite code working, at once")
    cmd.add_argument("code_or_id", metavar="CODE_OR_ID", help="the code, or its id in list-invites")
    cmd = add(
        "backup",
        cmd_backup,
        "copy the database while the app runs (SQLite's backup API, or pg_dump), then check "
        "the copy",
    )
    cmd.add_argument(
        "destination",
        nargs="?",
        type=Path,
        help="the new file (default: DATA_DIR/backups/shardlab-<UTC time>.db, or .dump for "
        "PostgreSQL)",
    )
    cmd = add(
        "restore", cmd_restore, "replace the database with a checked backup; stop the app first"
    )
    cmd.add_argument("backup", type=Path)
    cmd.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    cmd = add(
        "check",
        cmd_check,
        "check the database or a backup: SQLite's integrity check, or on PostgreSQL every "
        "table (or the whole archive) read through",
    )
    cmd.add_argument("path", nargs="?", type=Path, help="a file (default: the live database)")
    cmd = add(
        "repair-progress",
        cmd_repair_progress,
        "mend stored quiz schedules that the progress import would refuse (they break their "
        "learner's pages); prints what it found and fixed, per user",
    )
    cmd.add_argument("--dry-run", action="store_true", help="report what is broken; change nothing")
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
