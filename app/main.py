"""create_app(): settings in, a ready FastAPI app out.

Run with `uvicorn --factory app.main:create_app` (scripts/serve does).
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import quote

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, RedirectResponse, Response
from sqlalchemy import Engine, text
from starlette.concurrency import run_in_threadpool
from starlette.middleware.sessions import SessionMiddleware
from starlette_compress import CompressMiddleware, remove_compress_type

from app.accounts.account_router import router as account_router
from app.accounts.router import router as accounts_router
from app.admin.backup import app_lock
from app.admin.router import router as admin_router
from app.body_limit import limit_request_bodies
from app.calculators import routers as calculator_routers
from app.calculators.results import RepeatedQueries
from app.cards.check_router import router as card_check_router
from app.cards.glossary_router import router as glossary_router
from app.cards.router import CALCULATOR_PAGES, DEMO_PAGES
from app.cards.router import router as cards_router
from app.config import Settings
from app.content import load_content
from app.db import engine_beside, make_engine, migrate
from app.errors import answer_busy_database, refusal, register_error_pages
from app.heavy_work import HEAVY_MAX_WAITING, HEAVY_PER_ADDRESS, HEAVY_WAIT_S, HeavyWork
from app.i18n import LOCALES, LanguageMiddleware, translations
from app.journey.return_link import back_to_step
from app.journey.router import router as journey_router
from app.live.queue import SharedQueue
from app.live.router import router as live_router
from app.live.worker_pool import WorkerPool, health_summary
from app.live.worker_process import LocalWorker, keep_worker_running
from app.logs import RequestLog, configure_logging
from app.proxy_headers import ProxyHeaders
from app.quiz.free_grading import MAX_RESPONSE_CHARS
from app.quiz.items import LEVEL_LABELS
from app.quiz.practice_router import router as practice_router
from app.quiz.router import router as quiz_router
from app.quiz.topic_select import topic_options
from app.ratelimit import RateLimited, limits_for
from app.request_shape import limit_json_shapes
from app.route_gates import gate_routers
from app.route_guards import guard_routes
from app.security import (
    CrossOriginProtection,
    CsrfRefused,
    LoginRequired,
    SecurityHeaders,
)
from app.static_files import static_app
from app.templating import templates

log = logging.getLogger("shardlab")


def _select_one(engine: Engine) -> None:
    with engine.connect() as conn:
        conn.execute(text("SELECT 1"))


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or Settings()
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    configure_logging(settings.log_format, settings.log_level)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        # Held while the app runs, so `python -m app.admin restore` can refuse to run under it.
        lock = app_lock(settings.data_dir, settings.database_url)
        migrate(settings.database_url)
        app.state.engine = make_engine(settings.database_url)
        # This start of the app, over this database: what is kept for one learner is kept
        # under it (app/page_cache.py OWN_PAGES).
        app.state.run = secrets.token_hex(8)
        app.state.engine_beside = engine_beside(app.state.engine)
        # The same pool, each statement its own transaction: for a lone read (the session
        # check, app/security.py), which then sends no BEGIN and no ROLLBACK.
        app.state.engine_autocommit = app.state.engine.execution_options(
            isolation_level="AUTOCOMMIT"
        )
        # In the database, so every web process counts against the same windows.
        app.state.limits = limits_for(
            app.state.engine,
            settings.login_rate_limit,
            settings.register_rate_limit,
            settings.demo_rate_limit,
            settings.calibrate_rate_limit,
        )
        worker = None
        if settings.worker_spawn:
            worker = LocalWorker(
                ranks=settings.worker_ranks,
                backend=settings.worker_backend,
                address=settings.worker_address,
                token=settings.worker_secret,
                log_path=settings.data_dir / "worker.log",
                pg_timeout_s=settings.worker_pg_timeout_s,
            )
            # Not awaited: pages serve at once while the ranks start (a few seconds on CPU).
            worker.start()
            log.info(
                "demo worker starting on %s (%d ranks)",
                settings.worker_address,
                settings.worker_ranks,
            )
        app.state.worker = worker
        # In the database: every web process sees one line in front of the one pool.
        app.state.demo_queue = SharedQueue(
            app.state.engine,
            app.state.worker_pool,
            settings.demo_queue_max,
            heartbeat_engine=app.state.engine_beside,
        )
        # Made here, on the loop their waiters run on (app/heavy_work.py).
        app.state.heavy_work = HeavyWork(
            settings.heavy_work_slots,
            wait_s=HEAVY_WAIT_S,
            max_waiting=HEAVY_MAX_WAITING,
            per_address=HEAVY_PER_ADDRESS,
        )
        hashing_slots = settings.hashing_slots or os.cpu_count() or 1
        app.state.hashing = HeavyWork(
            hashing_slots,
            wait_s=HEAVY_WAIT_S,
            max_waiting=4 * hashing_slots,
            # Log-ins are limited per address already; a hash is a quarter second.
            per_address=hashing_slots + 2,
        )
        watchdog = asyncio.create_task(keep_worker_running(worker)) if worker else None
        # What start-up made (the content, the compiled templates, the imports: some 250,000
        # objects) lives as long as the app. Frozen, the collector's oldest generation no longer
        # walks it: a full collection took 256-408 ms on 2 cores (bench/startup.py), every
        # request in flight stalled behind it; under load it now takes 35-100 ms.
        gc.freeze()
        try:
            yield
        finally:
            gc.unfreeze()  # an app made again in this process (the tests) lets the old one go
            if watchdog is not None:
                watchdog.cancel()
            if worker is not None:
                worker.stop()
            app.state.demo_queue.close()
            app.state.engine.dispose()
            app.state.engine_beside.dispose()
            lock.close()

    app = FastAPI(
        title="ShardLab",
        summary="Cards, calculators, live torch.distributed demos and a quiz "
        "on distributed LLM training.",
        version="0.1.0",
        lifespan=lifespan,
        # No OpenTelemetry here: off, FastAPI asks no provider (an environment read) per request.
        telemetry={"tracing": False, "metrics": False, "logs": False},
    )
    app.state.settings = settings
    templates.env.globals["back_to_step"] = back_to_step  # app/templating.py says why here
    templates.env.globals["topic_options"] = topic_options  # likewise
    templates.env.globals["level_labels"] = LEVEL_LABELS
    templates.env.globals["max_response_chars"] = MAX_RESPONSE_CHARS
    # Content is loaded here, not in the lifespan, so a broken card stops the app at once.
    content = load_content(settings.content_dir, tuple(CALCULATOR_PAGES), tuple(DEMO_PAGES))
    app.state.cards, app.state.quiz = content.cards, content.quiz
    app.state.design_rounds, app.state.glossary = content.design_rounds, content.glossary
    app.state.search = content.search
    for lang in LOCALES:
        translations(lang)  # compiled now: a broken catalogue stops the app here, not mid-page
    app.state.worker_pool = WorkerPool(
        settings.worker_pool,
        settings.worker_secret,
        read_timeout_s=settings.demo_stall_timeout_s,
    )

    register_error_pages(app)  # first: its 500 page is made inside the middleware below
    # Inside the byte limit (added before it, so it runs after): a JSON body's values counted.
    app.add_middleware(limit_json_shapes)
    app.add_middleware(limit_request_bodies)
    # Inside the session middleware (added after it, so it runs later): a user's setting counts.
    app.add_middleware(LanguageMiddleware)
    app.add_middleware(
        SessionMiddleware,
        secret_key=settings.session_secret,
        session_cookie="shardlab_session",
        same_site="lax",  # HttpOnly too: Starlette always sets it on this cookie
        https_only=settings.cookie_secure,
    )
    app.add_middleware(CrossOriginProtection)
    app.add_middleware(SecurityHeaders)
    # Pages, fragments and JSON go out compressed (zstd, brotli or gzip, as the client accepts);
    # static files arrive precompressed (app/static_files.py) and are passed through as they
    # are. Demo runs' text/event-stream stays uncompressed, each event sent as it is made, so
    # no encoder or proxy holds one back (a process-wide setting of the library).
    remove_compress_type("text/event-stream")
    app.add_middleware(CompressMiddleware, minimum_size=1024)  # below ~1 KB: little to gain
    # No database connection within the pool's timeout: 503, wherever it was asked for.
    app.add_middleware(answer_busy_database)
    app.add_middleware(RequestLog)  # last added runs first: it times everything
    # Added last, so it runs first: the log, like every route, sees the client a proxy names.
    app.add_middleware(ProxyHeaders, trusted_proxies=settings.trusted_proxies)
    app.mount("/static", static_app(), name="static")
    for router in (
        cards_router,
        card_check_router,
        glossary_router,
        *calculator_routers(),
        live_router,
        accounts_router,
        account_router,
        quiz_router,
        practice_router,
        journey_router,
        admin_router,
    ):
        app.include_router(router)
    # Matching passes over routers that cannot hold the path (app/route_gates.py says why).
    gate_routers(app)
    # A calculator's answer asked again at the same address, sent before FastAPI parses the
    # query (app/calculators/results.py); inside the guard, which then runs first.
    app.router.middleware_stack = RepeatedQueries(app.router.middleware_stack)
    # The query bound, the ended-session check and the CSRF check (app/route_guards.py).
    guard_routes(app)

    @app.exception_handler(LoginRequired)
    async def _login_first(request: Request, exc: LoginRequired) -> RedirectResponse:
        return RedirectResponse(f"/login?next={quote(exc.next_path)}", status_code=303)

    @app.exception_handler(CsrfRefused)
    async def _csrf_refused(request: Request, exc: CsrfRefused) -> Response:
        return refusal(request, exc.message, 403)

    @app.exception_handler(RateLimited)
    async def _rate_limited(request: Request, exc: RateLimited) -> Response:
        response = refusal(request, exc.message, 429)
        response.headers["Retry-After"] = str(exc.retry_after_s)
        return response

    @app.get("/healthz", tags=["health"])
    async def healthz(request: Request) -> JSONResponse:
        """The database and the demo workers, each 'ok' or what is wrong."""
        report: dict[str, Any] = {}
        try:
            # In the thread pool: a new connection's PRAGMAs may wait out busy_timeout.
            await run_in_threadpool(_select_one, request.app.state.engine)
            report["database"] = "ok"
        except Exception as exc:  # noqa: BLE001 - a health check reports, never raises
            report["database"] = f"error: {exc}"
        # The embedded SQLite file or a PostgreSQL server (cohort mode): an operator tells the
        # two deployments apart from outside.
        report["database_kind"] = request.app.state.settings.database_kind
        # A worker running a demo answers nothing until it ends: the line says which are busy.
        queue = request.app.state.demo_queue
        busy = await queue.busy_workers() if report["database"] == "ok" else set()
        workers = await request.app.state.worker_pool.health(timeout_s=2.0, busy=busy)
        report["worker"] = health_summary(workers)
        report["workers"] = workers
        healthy = report["database"] == "ok"
        return JSONResponse(
            {"status": "ok" if healthy else "error", **report}, status_code=200 if healthy else 503
        )

    return app
