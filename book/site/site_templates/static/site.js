// The book's own script on every page (book/site/site_pages.py adds it).
//
// 1. The header's two sidebar buttons (book/site/site_templates/toggle-*-sidebar.html) pass a click on
//    to the theme's own button of the same class: pydata-sphinx-theme 0.17 and sphinx-book-theme 1.3
//    both listen on the first .primary-toggle / .secondary-toggle of the page only, a hidden one, so
//    the buttons a reader sees did nothing (on a phone, the table of contents could not be opened).
(() => {
  const forward = (event) => {
    const own = event.currentTarget;
    const theirs = [...document.querySelectorAll(own.dataset.forward)].find((b) => b !== own);
    if (theirs) {
      event.preventDefault();
      event.stopPropagation();
      theirs.click();
    }
  };
  const bind = () => document.querySelectorAll("button[data-forward]").forEach((b) => b.addEventListener("click", forward));
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", bind);
  else bind();
})();

// 2. Words that scripts of other packages write into a page in English only, in the page's language.
// window.SITE_WORDS (English -> the page's language) is written into every page by
// book/site/site_pages.py from book/locale/<lang>/LC_MESSAGES/sphinx.po; on English pages it is empty.
// sphinx-copybutton: its buttons' tooltip (data-tooltip, changed on every copy) and icon title.
(() => {
  const words = window.SITE_WORDS || {};
  if (!Object.keys(words).length) return;
  const say = (el, attribute) => {
    const value = el.getAttribute(attribute);
    if (value in words) el.setAttribute(attribute, words[value]);
  };
  const translate = (root) => {
    root.querySelectorAll("[data-tooltip]").forEach((el) => say(el, "data-tooltip"));
    root.querySelectorAll("button.copybtn svg title").forEach((t) => {
      if (t.textContent in words) t.textContent = words[t.textContent];
    });
  };
  const watch = () => {
    translate(document);
    new MutationObserver((changes) => {
      for (const change of changes) {
        if (change.type === "attributes") say(change.target, "data-tooltip");
        else change.addedNodes.forEach((node) => node.querySelectorAll && translate(node));
      }
    }).observe(document.body, { subtree: true, childList: true, attributes: true, attributeFilter: ["data-tooltip"] });
  };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", watch);
  else watch();
})();
