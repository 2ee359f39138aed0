/* Loaded after the widget manager on the pages that show Jupyter widgets (tools/vendor_assets.py).
 *
 * ipywidgets 8's page renderer (html-manager's embed-amd.js) draws controls that a keyboard can
 * reach but that a screen reader cannot name or read:
 *
 * - a slider's handle (role="slider", Tab-reachable) is not tied to the slider's visible label,
 *   so it is announced as an unnamed slider (axe-core: aria-input-field-name); its editable
 *   readout is an unnamed text field;
 * - a ToggleButtons row has its label beside it but nothing ties them, and the chosen button is
 *   marked only by a CSS class (mod-active), so "which one is chosen" is never said;
 * - an unset tooltip is written as title="null" on every label (a "null" hover text).
 *
 * This file ties each control to its widget's visible label (aria-labelledby: the name is the
 * label's text, in the page's language, as the notebook wrote it), marks the chosen toggle
 * button with aria-pressed, and lets the arrow keys (and Home/End) move the choice along a row of
 * toggle buttons, as in a radio group; Tab still stops at every button, and Enter or Space
 * presses it. It watches the page, so widgets drawn later (on the load event) are handled too.
 */
(function () {
  "use strict";
  var count = 0;

  function idOf(element) {
    if (!element.id) element.id = "normlib-widget-label-" + (++count);
    return element.id;
  }

  function labelOf(widget) {
    var label = widget.querySelector(":scope > label.widget-label");
    if (!label) return null;
    if (label.getAttribute("title") === "null") label.removeAttribute("title");
    return label.textContent.trim() ? label : null;
  }

  function slider(widget) {
    var label = labelOf(widget);
    if (!label) return;
    var id = idOf(label);
    widget.querySelectorAll(".noUi-handle").forEach(function (handle) {
      handle.setAttribute("aria-labelledby", id);
    });
    var readout = widget.querySelector(".widget-readout[contenteditable]");
    if (readout) {
      readout.setAttribute("role", "textbox");
      readout.setAttribute("aria-labelledby", id);
    }
  }

  function buttonsOf(row) {
    return Array.prototype.slice.call(row.querySelectorAll("button.widget-toggle-button"));
  }

  function pressedState(row) {
    buttonsOf(row).forEach(function (button) {
      var pressed = button.classList.contains("mod-active") ? "true" : "false";
      if (button.getAttribute("aria-pressed") !== pressed) button.setAttribute("aria-pressed", pressed);
    });
  }

  var KEYS = { ArrowRight: 1, ArrowDown: 1, ArrowLeft: -1, ArrowUp: -1 };

  function onKey(event) {
    var row = event.currentTarget;
    var buttons = buttonsOf(row).filter(function (b) { return !b.disabled; });
    var at = buttons.indexOf(document.activeElement);
    if (at < 0 || event.altKey || event.ctrlKey || event.metaKey) return;
    var to;
    if (event.key in KEYS) to = (at + KEYS[event.key] + buttons.length) % buttons.length;
    else if (event.key === "Home") to = 0;
    else if (event.key === "End") to = buttons.length - 1;
    else return;
    event.preventDefault();
    buttons[to].focus();
    buttons[to].click();
  }

  function toggles(widget) {
    var row = widget.querySelector(":scope > div");
    if (!row) return;
    var label = labelOf(widget);
    row.setAttribute("role", "group");
    if (label) row.setAttribute("aria-labelledby", idOf(label));
    if (!row.dataset.normlibKeys) {
      row.dataset.normlibKeys = "1";
      row.addEventListener("keydown", onKey);
    }
    pressedState(row);
  }

  function enhance() {
    document.querySelectorAll(".widget-slider").forEach(slider);
    document.querySelectorAll(".widget-toggle-buttons").forEach(toggles);
  }

  var scheduled = false;
  function schedule() {
    if (scheduled) return;
    scheduled = true;
    setTimeout(function () { scheduled = false; enhance(); }, 0);
  }

  function concernsWidgets(mutation) {
    var node = mutation.target;
    return node.nodeType === 1 && (node.closest(".jupyter-widgets, .widget-subarea") ||
      Array.prototype.some.call(mutation.addedNodes, function (n) {
        return n.nodeType === 1 && (n.matches(".jupyter-widgets") || n.querySelector(".jupyter-widgets"));
      }));
  }

  function start() {
    enhance();
    new MutationObserver(function (mutations) {
      if (mutations.some(concernsWidgets)) schedule();
    }).observe(document.body, { childList: true, subtree: true, attributes: true, attributeFilter: ["class"] });
  }

  if (document.body) start();
  else document.addEventListener("DOMContentLoaded", start);
})();
