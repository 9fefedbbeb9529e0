// What the account areas share: their error and notice lines, and reading
// an area's data now and again after each action.
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';

import { describe } from '../util';

/** The error (an alert) and notice (a status) lines at the top of an area. */
export function Feedback({ error, notice }: { error: string; notice: string }) {
  return (
    <>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {notice && (
        <p class="notice" role="status">
          {notice}
        </p>
      )}
    </>
  );
}

/**
 * An area's state around `load` (which reads its data into the area's own
 * state): read when the area opens and whenever `key` (the client) changes;
 * `act` runs an action, reads the data again, and only then shows the
 * action's notice, so what the notice says is on screen. Errors of either
 * become the error line, in words (`describe`).
 */
export function useArea(load: () => Promise<void>, key: unknown) {
  const [error, setError] = useState('');
  const [notice, setNotice] = useState('');
  const [busy, setBusy] = useState(false);
  // The latest `load`, without re-reading on every render.
  const latest = useRef(load);
  latest.current = load;
  const refresh = useCallback(async () => {
    try {
      await latest.current();
    } catch (e) {
      setError(describe(e));
    }
  }, []);
  useEffect(() => {
    void refresh();
  }, [refresh, key]);
  const act = useCallback(
    async (what: () => Promise<string>) => {
      setBusy(true);
      setError('');
      setNotice('');
      let text = '';
      try {
        text = await what();
      } catch (e) {
        setError(describe(e));
      } finally {
        setBusy(false);
      }
      await refresh();
      setNotice(text);
    },
    [refresh],
  );
  return { error, setError, notice, setNotice, busy, refresh, act };
}
