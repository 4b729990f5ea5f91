"""What the register and log-in forms accept."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, StringConstraints

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
