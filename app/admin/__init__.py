"""Running a ShardLab server: the admin page (/admin) and the admin CLI (python -m app.admin)."""
