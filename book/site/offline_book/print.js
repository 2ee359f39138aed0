/* Printing: a display equation as wide as the paper allows, never wider (print.css uses this).
 *
 * On screen a long equation scrolls sideways; paper cannot. print.css prints display math a
 * little smaller than the screen does, and no larger than the text column: for that it needs each
 * equation's width in ems, which only the typeset page knows. This file writes it on each display
 * equation as the custom property --print-em-width once MathJax has typeset the page (and again
 * just before printing); print.css then sets the equation's font size to at most the column's
 * width divided by it. Without this file (or JavaScript) print.css still prints every equation,
 * at its usual size.
 */
(() => {
  const measure = () => {
    for (const box of document.querySelectorAll('mjx-container[display="true"]')) {
      const math = box.querySelector(':scope > mjx-math');
      const size = parseFloat(getComputedStyle(box).fontSize);
      const width = math ? math.getBoundingClientRect().width : 0;
      if (width && size) box.style.setProperty('--print-em-width', String(width / size));
    }
  };
  const typeset = () => window.MathJax && MathJax.startup && MathJax.startup.promise;
  window.addEventListener('load', () => {
    const done = typeset();
    if (done) done.then(measure); else measure();
  });
  window.addEventListener('beforeprint', measure);
})();
