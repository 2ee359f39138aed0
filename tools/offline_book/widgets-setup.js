/* Loaded just before require.js on the pages that show Jupyter widgets (tools/vendor_assets.py).
 *
 * 1. RequireJS configuration. RequireJS takes a global `require` object that exists before it
 *    loads as its configuration. Every module id then resolves next to this file, on the host
 *    serving the book:
 *    - html-manager's embed-amd.js defines @jupyter-widgets/base, controls, output and
 *      html-manager itself, and each module places its icon fonts next to the URL RequireJS gives
 *      it; by default that is /@jupyter-widgets/... on the server (404). Both paths below point
 *      at the folder that holds embed-amd.js and the fonts.
 *    - A widget module that embed-amd.js does not contain (anything but base, controls and
 *      output) would be looked up under third-party/ here (the data-jupyter-widgets-cdn of the
 *      embed-amd.js script tag), that is, it must be vendored: the book never asks a CDN.
 *
 * 2. ipywidgets 8 typesets widget descriptions with MathJax 2's API,
 *    MathJax.Hub.Queue(["Typeset", MathJax.Hub, element]). The book loads MathJax 3, which has no
 *    Hub, so every widget with a description threw "Cannot read properties of undefined (reading
 *    'Queue')". MathJax 3 gets a Hub whose Queue typesets with MathJax 3. Widgets are rendered on
 *    the window's load event, after the deferred MathJax script has run.
 */
(function () {
  var script = document.currentScript;
  var src = script ? script.src : "";
  var here = src.slice(0, src.lastIndexOf("/") + 1);
  var manager = here + "html-manager";
  window.require = {
    baseUrl: here,
    paths: {
      "@jupyter-widgets/html-manager/dist": manager,
      "@jupyter-widgets": manager
    }
  };

  function typeset(element) {
    var mathjax = window.MathJax;
    mathjax.startup.promise
      .then(function () { return mathjax.typesetPromise(element ? [element] : undefined); })
      .catch(function (err) { console.error("MathJax could not typeset a widget:", err); });
  }

  function bridgeMathJax() {
    var mathjax = window.MathJax;
    // No MathJax on this page, MathJax 2 (has a Hub), or MathJax 3 not loaded yet.
    if (!mathjax || mathjax.Hub || !mathjax.startup || !mathjax.typesetPromise) return;
    mathjax.Hub = {
      Queue: function () {
        Array.prototype.forEach.call(arguments, function (job) {
          if (Array.isArray(job) && job[0] === "Typeset") typeset(job[2]);
        });
      }
    };
  }

  bridgeMathJax();
  // Registered before embed-amd.js registers its own load listener, so it runs first.
  window.addEventListener("load", bridgeMathJax);
})();
