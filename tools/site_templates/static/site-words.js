// Words that scripts of other packages write into a page in English only, in the page's language.
// window.SITE_WORDS (English -> the page's language) is written into every page by
// tools/site_pages.py from locale/<lang>/LC_MESSAGES/sphinx.po; on English pages it is empty.
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
