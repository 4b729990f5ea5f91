# Sourced by scripts/serve and scripts/test: make .venv and install the project into it,
# again only when pyproject.toml (or the extras asked for) changed since the last install.
ensure_venv() {
    local extras="$1" stamp want
    if [ ! -x .venv/bin/python ]; then
        echo "Creating .venv with $(python3 --version)…"
        python3 -m venv .venv
    fi
    stamp=.venv/.shardlab-installed
    want="$(sha256sum pyproject.toml | cut -d' ' -f1) ${extras}"
    if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
        echo "Installing ShardLab${extras:+ with [$extras]} into .venv…"
        # Plain pip on purpose: it takes torch's CPU wheel from this machine's wheel store;
        # uv or poetry would download a CUDA build of several GB.
        .venv/bin/python -m pip install --quiet --disable-pip-version-check \
            -e ".${extras:+[$extras]}"
        echo "$want" > "$stamp"
    fi
}
