"""Chinese and emoji are drawn with real glyphs, not boxes (issue 43), by kaleido's PNG export
and by the Chromium the browser tests use: the fonts come from .ci/apt-packages.txt
(fonts-noto-cjk, fonts-noto-color-emoji), installed by ./run.sh setup.

Without a font for a script, every character of it is drawn as the same "missing glyph" box: two
texts that differ only in which Chinese characters they hold give identical pictures.
"""
from __future__ import annotations

import io

import pytest


def _pixels(png: bytes) -> bytes:
    from PIL import Image

    return Image.open(io.BytesIO(png)).convert("RGB").tobytes()


def _heatmap_png(title: str) -> bytes:
    import plotly.graph_objects as go

    from components.export import figure_png, png_problem

    if png_problem() is not None:
        pytest.skip(png_problem())
    fig = go.Figure(go.Heatmap(z=[[1, 2], [3, 4]], x=["原文", "键盘噪声"], y=["模型甲", "模型乙"]))
    fig.update_layout(title=title, width=420, height=300)
    return figure_png(fig, scale=1.0)


def test_a_chinese_heatmap_png_is_not_drawn_in_boxes():
    assert _pixels(_heatmap_png("匹兹堡钢人队")) != _pixels(_heatmap_png("埃菲尔铁塔"[:5] + "建"))


@pytest.mark.e2e
def test_chromium_draws_chinese_and_emoji_glyphs():
    from browser import launch_chromium

    def shot(page, text: str) -> bytes:
        page.set_content(f'<p style="font-size:40px;margin:0">{text}</p>')
        return _pixels(page.screenshot(clip={"x": 0, "y": 0, "width": 400, "height": 60}))

    with launch_chromium() as browser:
        page = browser.new_page(viewport={"width": 400, "height": 60})
        assert shot(page, "匹兹堡钢人队") != shot(page, "埃菲尔铁塔建")
        assert shot(page, "🎤🧪") != shot(page, "🔬🏁")
