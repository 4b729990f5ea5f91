"""In Chromium: the admin makes an invite code, sees it listed, and revokes it, all by htmx."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect
from sqlmodel import Session, select

from app.accounts.models import User
from app.config import Settings
from app.db import make_engine

pytestmark = pytest.mark.browser


def _make_admin(settings: Settings, username: str) -> None:
    engine = make_engine(settings.database_url)
    with Session(engine) as session:
        user = session.exec(select(User).where(User.username == username)).one()
        user.is_admin = True
        session.add(user)
        session.commit()
    engine.dispose()


def test_the_admin_makes_lists_and_revokes_an_invite(page: Page, live_settings: Settings) -> None:
    page.goto("/register")
    page.fill("input[name=username]", "invite-admin")
    page.fill("input[name=password]", "correct horse")
    page.click("button[type=submit]")
    _make_admin(live_settings, "invite-admin")
    page.goto("/admin")
    page.fill("input[name=uses]", "2")
    page.click("text=Make an invite code")
    code = page.locator("#invite-code")
    expect(code).to_be_visible()
    # The list was swapped in out of band with the new code as its first row.
    row = page.locator("#invites tbody tr").first
    expect(row).to_contain_text(code.inner_text())
    expect(row).to_contain_text("0/2")
    expect(row).to_contain_text("active")
    row.get_by_role("button", name="Revoke").click()
    expect(row).to_contain_text("revoked")
    expect(row.get_by_role("button", name="Revoke")).to_have_count(0)
    expect(code).to_be_visible()  # the row was swapped in place, not the page reloaded
    page.reload()
    expect(page.locator("#invites tbody tr").first).to_contain_text("revoked")
