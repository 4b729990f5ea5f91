"""The admin's own error: something a person can fix, said in words."""


class BackupError(Exception):
    """Something a person can fix: a bad file, a running app, a missing database or tool."""
