// A message's HTML made safe to show: DOMPurify, then remote images and
// sources removed; the result goes into a sandboxed frame without scripts.
import DOMPurify from 'dompurify';

import { frameDocument } from './logic';

let blocked = 0;

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
