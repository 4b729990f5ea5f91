"""Worked explanations: what every surface shows to say how a number comes about.

The calculator pages, the cards' worked examples, the quiz's generated solutions and the
planner all show the same working: LaTeX formulas, symbolic and with the user's numbers
substituted, the names of each term, the ZeRO stages side by side, the pipeline's Gantt
chart. It is written once, here, one module per topic (memory.py for the ZeRO stages,
compute.py, roofline.py, communication.py, pipeline.py, planner.py, training.py).

Where it sits: above app.calc, which computes every number, and below the features that
show the working. A module here may import app.calc, app.formatting and app.i18n; it never
imports app.calculators, app.cards, app.quiz, app.live or a router, so each of those can
import it. Page plumbing (parsing a request, a template's context, share URLs, htmx
fragments) stays with the feature that serves the page.
"""
