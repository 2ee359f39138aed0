/* The boxes of a page that scroll sideways: printed outputs, code, tables, long equations.
 *
 * On a narrow screen (a phone is 390 px wide) a wide printed output or table keeps its lines and
 * scrolls inside its own box (narrow-screens.css). This file marks each box that is wider than
 * its content right now, and unmarks it when the window grows:
 *
 * - data-scrolls="right" | "both" | "left": the sides with more to see; narrow-screens.css fades
 *   that edge, so the reader sees that the box goes on;
 * - a printed output, code or a table gets a tab stop (its arrow keys scroll it), the role group
 *   and a name in the page's language ("가로로 스크롤되는 출력"), which a screen reader says on
 *   reaching it. An equation already has MathJax's own tab stop and speech: it only gets the fade.
 *
 * It runs once the page (and its fonts and math) have loaded, after a resize, and when a folded
 * cell opens. Without JavaScript the boxes still scroll, without the fade.
 */
(() => {
  const BOXES = '.bd-article pre, .bd-article .pst-scrollable-table-container, ' +
                '.bd-article mjx-container[display="true"], .bd-article span.math';
  const NAMED = 'pre, .pst-scrollable-table-container';
  const WORDS = {
    ko: { output: '가로로 스크롤되는 출력', code: '가로로 스크롤되는 코드', table: '가로로 스크롤되는 표' },
    en: { output: 'Output, scrolls sideways', code: 'Code, scrolls sideways', table: 'Table, scrolls sideways' },
  };
  const words = WORDS[(document.documentElement.lang || '').slice(0, 2)] || WORDS.en;

  const kind = (box) => box.matches('.pst-scrollable-table-container') ? 'table'
    : box.closest('.cell_output') ? 'output' : 'code';

  const sides = (box) => {
    const left = box.scrollLeft > 1;
    const right = box.scrollLeft < box.scrollWidth - box.clientWidth - 1;
    box.dataset.scrolls = left && right ? 'both' : left ? 'left' : 'right';
  };

  let pending = 0;
  const onScroll = (event) => {
    if (pending) return;
    pending = requestAnimationFrame(() => { pending = 0; sides(event.target); });
  };

  // Inline math always overflows its box by a few pixels (the glyphs' overhang, which the theme's
  // overflow: hidden cuts unseen): it is wide only when the equation itself is wider than the line.
  const wider = (box) => {
    if (!box.matches('span.math')) return box.scrollWidth > box.clientWidth + 1;
    const math = box.querySelector('mjx-container');
    return !!math && math.getBoundingClientRect().width > box.clientWidth + 1;
  };

  const mark = (box) => {
    const wide = box.clientWidth > 0 && wider(box);
    const marked = 'scrolls' in box.dataset;
    if (wide) {
      if (!marked) {
        box.addEventListener('scroll', onScroll, { passive: true });
        if (box.matches(NAMED)) {
          box.tabIndex = 0;
          if (!box.hasAttribute('role') && !box.hasAttribute('aria-label')) {
            box.setAttribute('role', 'group');
            box.setAttribute('aria-label', words[kind(box)]);
            box.dataset.scrollsNamed = '';
          }
        }
      }
      sides(box);
    } else if (marked) {
      box.removeEventListener('scroll', onScroll);
      delete box.dataset.scrolls;
      if (box.matches(NAMED)) box.tabIndex = -1;
      if ('scrollsNamed' in box.dataset) {
        box.removeAttribute('role');
        box.removeAttribute('aria-label');
        delete box.dataset.scrollsNamed;
      }
    }
  };

  // <html data-scroll-boxes="390">: the width of the window the boxes were last marked at
  // (tests/book/test_browser.py waits for it after resizing the page to a phone's width).
  const update = () => {
    document.querySelectorAll(BOXES).forEach(mark);
    document.documentElement.dataset.scrollBoxes = String(window.innerWidth);
  };
  let timer = 0;
  const later = () => { clearTimeout(timer); timer = setTimeout(update, 100); };

  const start = () => {
    update();
    const typeset = window.MathJax && MathJax.startup && MathJax.startup.promise;
    Promise.all([typeset || null, document.fonts ? document.fonts.ready : null]).then(update);
    window.addEventListener('resize', later);
    // a folded cell (<details>) opening: its code was 0 px wide while folded
    document.addEventListener('toggle', later, true);
  };
  if (document.readyState === 'complete') start(); else window.addEventListener('load', start);
})();
