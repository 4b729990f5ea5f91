"""No input a form can send turns a calculator page into a 500: each field of each page, alone,
set to something wrong, gets the page back with its message (422) or a result (200).

`/calculators/training-memory?tp=3` was a 500: the page re-rendered with the raw inputs,
which lacked the ZeRO stage its select read.
"""

from __future__ import annotations

import re

from fastapi.testclient import TestClient

BAD_VALUES = ("x", "-1", "3", "1e30", "")
# Every page app/calculators/pages.py's add_calculator_pages makes (its `name` argument).
CALCULATORS = ("memory", "training", "communication", "pipeline", "compute", "roofline",
               "inference", "failures", "planner")  # fmt: skip


def test_each_field_alone_set_wrong_never_gives_a_500(client: TestClient) -> None:
    pages = [client.app.url_path_for(f"{name}_page") for name in CALCULATORS]
    failures = []
    for path in pages:
        page = client.get(path)
        assert page.status_code == 200, path
        fields = set(re.findall(r'<(?:input|select)[^>]* name="([a-z_0-9]+)"', page.text))
        assert fields, path
        for field in sorted(fields):
            for value in BAD_VALUES:
                response = client.get(path, params={field: value})
                if response.status_code not in (200, 422):
                    failures.append((path, field, value, response.status_code))
    assert failures == []
