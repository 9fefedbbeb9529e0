// The signed-in page: a navigation bar of the account's areas and the one shown.
import { useEffect, useState } from 'preact/hooks';

import { AREAS } from './areas';
import type { Unlocked } from './session';

/** The area named by the URL fragment (`#webhooks`), else the first. */
function areaFromHash(): string {
  const id = window.location.hash.replace(/^#/, '');
  return AREAS.some((a) => a.id === id) ? id : (AREAS[0]?.id ?? 'mail');
}

export function AccountView({ session }: { session: Unlocked }) {
  const [current, setCurrent] = useState(areaFromHash);
  useEffect(() => {
    const follow = () => setCurrent(areaFromHash());
    window.addEventListener('hashchange', follow);
    return () => window.removeEventListener('hashchange', follow);
  }, []);
  const area = AREAS.find((a) => a.id === current) ?? AREAS[0];
  return (
    <>
      {AREAS.length > 1 && (
        <nav class="areas" aria-label="Account">
          {AREAS.map((a) => (
            <a key={a.id} href={`#${a.id}`} data-testid={`nav-${a.id}`} aria-current={a.id === area?.id ? 'page' : undefined}>
              {a.title}
            </a>
          ))}
        </nav>
      )}
      {area !== undefined && <area.View session={session} />}
    </>
  );
}
