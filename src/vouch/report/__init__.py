"""Reports: view models of results files, rendered as one self-contained HTML page.

``render_html`` dispatches on the results' ``kind`` (``bench``, ``baselines``); the page's
templates ship in ``templates/`` and its plots are inline SVG.
"""

from __future__ import annotations

from vouch.report._audit import render_audit
from vouch.report._generate import render_generate
from vouch.report._html import render_html, render_view, write_html, write_page
from vouch.report._v4v import build_v4v_view, render_v4v
from vouch.report._view import SUPPORTED_KINDS, ReportView, build_view

__all__ = [
    "SUPPORTED_KINDS",
    "ReportView",
    "build_v4v_view",
    "build_view",
    "render_audit",
    "render_generate",
    "render_html",
    "render_v4v",
    "render_view",
    "write_html",
    "write_page",
]
