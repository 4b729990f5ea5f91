"""What the register, log-in and change-password forms accept."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, StringConstraints, model_validator

from app.calc.messages import N_, Message

Username = Annotated[
    str,
    StringConstraints(
        strip_whitespace=True, min_length=3, max_length=40, pattern=r"^[A-Za-z0-9_.-]+$"
    ),
]
Password = Annotated[str, StringConstraints(min_length=8, max_length=200)]

LABELS = {"username": "Username", "password": "Password"}


class Credentials(BaseModel):
    username: Username
    password: Password


# Marked here, said in the reader's language beside the form (app/forms.py).
PASSWORD_CHANGE_LABELS = {
    "current_password": N_("Current password"),
    "new_password": N_("New password"),
    "new_password_again": N_("New password, again"),
}


class PasswordChange(BaseModel):
    # Any text: it is checked against the stored hash, not against today's rules.
    current_password: str
    # The same rules as at registration.
    new_password: Password
    new_password_again: str

    @model_validator(mode="after")
    def _typed_the_same_twice(self) -> PasswordChange:
        if self.new_password != self.new_password_again:
            raise ValueError(Message(N_("The new password and its repetition differ")))
        return self
