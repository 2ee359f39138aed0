/* Mounts the book's anywidget widgets on a static page, with no kernel and no widget manager.
 *
 * A notebook executed with its widget state stored carries, for every widget, its model's traits;
 * an anywidget's traits include `_esm`, the source of its front end (one ES module), and `_css`.
 * myst-nb writes that state into the page as <script type="application/vnd.jupyter.widget-state+json">
 * and each displayed widget as <script type="application/vnd.jupyter.widget-view+json">{"model_id": …}.
 * This loader, put on the pages that hold widget state instead of the 3.6 MB Jupyter widget manager
 * (book/site/vendor_assets.py), gives each view a minimal model (get, set, on, off, save_changes, send:
 * what anywidget's render functions use) and calls the module's render({model, el}) in place of the
 * script. The module is imported from a blob: URL, which works from a web server and from file://.
 * The book's own widgets' modules are not in the stored state but in anywidget-modules.js (a classic
 * script every widget page shares; book/site/vendor_assets.py), found by their `_anywidget_id`.
 * Changes stay in the page: there is no kernel to send them to. Two views of one model share one
 * model (as in Jupyter), and the reader's changes are kept in sessionStorage under the page and the
 * model's id, so that back/forward and reload show the state the reader left.
 *
 * A view of any other widget is left as it is and reported on the console: the book shows
 * only anywidgets (tests/book/test_browser.py fails on a console error).
 */
(function () {
  "use strict";
  var STATE = "application/vnd.jupyter.widget-state+json";
  var VIEW = "application/vnd.jupyter.widget-view+json";

  var KEEP = "anywidget-loader:" + location.pathname + ":";
  function kept(id) {
    try { return JSON.parse(sessionStorage.getItem(KEEP + id) || "{}"); } catch (e) { return {}; }
  }

  function Model(state, id) {
    var listeners = {}, changed = kept(id);
    Object.keys(changed).forEach(function (key) { state[key] = changed[key]; });
    this.get = function (key) { return state[key]; };
    this.set = function (key, value) {
      var old = state[key];
      state[key] = value;
      if (JSON.stringify(old) !== JSON.stringify(value)) {
        changed[key] = value;
        try { sessionStorage.setItem(KEEP + id, JSON.stringify(changed)); } catch (e) { /* storage off: not kept */ }
        (listeners["change:" + key] || []).slice().forEach(function (cb) { cb(); });
        (listeners.change || []).slice().forEach(function (cb) { cb(); });
      }
    };
    this.on = function (name, cb) { (listeners[name] = listeners[name] || []).push(cb); };
    this.off = function (name, cb) {
      if (!name) { listeners = {}; return; }
      listeners[name] = (listeners[name] || []).filter(function (f) { return cb && f !== cb; });
    };
    this.save_changes = function () {};
    this.send = function () {};
    this.widget_manager = { get_model: function () { return Promise.reject(new Error("no kernel")); } };
  }

  var modules = {};   // one import per distinct module source
  function load(source) {
    if (!modules[source]) {
      var url = URL.createObjectURL(new Blob([source], { type: "text/javascript" }));
      modules[source] = import(url).then(function (mod) { return mod.default || mod; });
    }
    return modules[source];
  }
  var styles = {};
  function style(css) {
    if (!css || styles[css]) return;
    styles[css] = true;
    var el = document.createElement("style");
    el.textContent = css;
    document.head.appendChild(el);
  }

  function mount() {
    var models = {}, live = {};      // the stored states; one live model per id, shared by its views
    document.querySelectorAll('script[type="' + STATE + '"]').forEach(function (tag) {
      var stored = JSON.parse(tag.textContent).state || {};
      Object.keys(stored).forEach(function (id) { models[id] = stored[id]; });
    });
    document.querySelectorAll('script[type="' + VIEW + '"]').forEach(function (tag) {
      var id = JSON.parse(tag.textContent).model_id;
      var stored = models[id];
      if (!stored || stored.model_name !== "AnyModel") {
        console.warn("anywidget-loader: not an anywidget, left as stored:", id);
        return;
      }
      // The book's own widgets leave their front end to anywidget-modules.js (book/site/vendor_assets.py).
      var shared = (window.anywidgetModules || {})[stored.state._anywidget_id];
      if (typeof stored.state._esm !== "string" && shared) {
        stored.state._esm = shared.esm;
        stored.state._css = shared.css;
      }
      if (typeof stored.state._esm !== "string") {
        console.error("anywidget-loader: no front end for " + stored.state._anywidget_id + " (" + id + ")");
        return;
      }
      var el = document.createElement("div");
      el.className = "anywidget-view";
      tag.parentNode.insertBefore(el, tag.nextSibling);
      var model = live[id] = live[id] || new Model(JSON.parse(JSON.stringify(stored.state)), id);
      style(stored.state._css);
      load(stored.state._esm).then(function (widget) {
        if (typeof widget === "function") widget = widget();
        var render = widget.render;
        return Promise.resolve(widget.initialize && widget.initialize({ model: model })).then(function () {
          return render({ model: model, el: el });
        });
      }).catch(function (error) {
        console.error("anywidget-loader: the widget " + id + " failed to render", error);
      });
    });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", mount);
  else mount();
})();
