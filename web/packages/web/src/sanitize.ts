// A message's HTML made safe to show: DOMPurify, then remote images and
// sources removed; the result goes into a sandboxed frame without scripts.
import DOMPurify from 'dompurify';

import { frameDocument, stripRemoteCss } from './logic';

let blocked = 0;

// Inline styles and <style> elements stay (mail is styled with them), less
// any remote reference.
DOMPurify.addHook('uponSanitizeAttribute', (_node, data) => {
  if (data.attrName !== 'style') return;
  const { css, removed } = stripRemoteCss(data.attrValue);
  data.attrValue = css;
  blocked += removed;
});
DOMPurify.addHook('uponSanitizeElement', (node, data) => {
  if (data.tagName !== 'style' || node.textContent === null) return;
  const { css, removed } = stripRemoteCss(node.textContent);
  if (removed > 0) node.textContent = css;
  blocked += removed;
});

DOMPurify.addHook('afterSanitizeAttributes', (node) => {
  const el = node as Element;
  if (typeof el.getAttribute !== 'function') return;
  for (const attr of ['src', 'background', 'poster']) {
    const value = el.getAttribute(attr);
    if (value !== null && !/^data:/i.test(value.trim())) {
      el.removeAttribute(attr);
      el.setAttribute('data-blocked', '');
      blocked += 1;
    }
  }
  // SVG images and references (<image href>, <use xlink:href>, <feImage>).
  for (const attr of ['href', 'xlink:href']) {
    const value = el.getAttribute(attr);
    if (value !== null && el.namespaceURI === 'http://www.w3.org/2000/svg' && !/^(data:|#)/i.test(value.trim())) {
      el.removeAttribute(attr);
      blocked += 1;
    }
  }
  if (el.hasAttribute('srcset')) {
    el.removeAttribute('srcset');
    blocked += 1;
  }
  if (el.tagName === 'A') {
    el.setAttribute('target', '_blank');
    el.setAttribute('rel', 'noopener noreferrer');
  }
});

/** The frame document for a message's HTML, and how many remote sources were removed. */
export function safeMailDocument(html: string): { doc: string; blocked: number } {
  blocked = 0;
  const clean = DOMPurify.sanitize(html, {
    FORBID_TAGS: ['form', 'input', 'button', 'textarea', 'select', 'iframe', 'frame', 'object', 'embed', 'link', 'meta', 'base', 'script'],
    FORBID_ATTR: ['action', 'formaction', 'ping'],
    ALLOW_DATA_ATTR: false,
  });
  return { doc: frameDocument(clean), blocked };
}
