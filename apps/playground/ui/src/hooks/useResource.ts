// Loading one thing from the API, again when `refresh` changes, at most once per `minGapMs`
// (a live run changes many times a second; its report need not follow each record).

import { useCallback, useEffect, useRef, useState } from "react";
import { errorMessage } from "../api/client";

export interface Resource<T> {
  data: T | null;
  error: string | null;
  /** Load again now. */
  reload: () => void;
}

export function useResource<T>(
  load: () => Promise<T>,
  refresh: unknown = 0,
  minGapMs = 0,
): Resource<T> {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [manual, setManual] = useState(0);
  const lastStart = useRef(-Infinity);
  const issued = useRef(0);
  const applied = useRef(0);
  const mounted = useRef(true);

  useEffect(() => {
    mounted.current = true;
    return () => {
      mounted.current = false;
    };
  }, []);

  useEffect(() => {
    // A load in flight is not dropped when `refresh` changes again: the newest answer wins,
    // so a view keeps up with a run that changes faster than one round trip.
    const run = () => {
      lastStart.current = Date.now();
      const mine = ++issued.current;
      load()
        .then((value) => {
          if (!mounted.current || mine < applied.current) return;
          applied.current = mine;
          setData(value);
          setError(null);
        })
        .catch((reason: unknown) => {
          if (!mounted.current || mine < applied.current) return;
          applied.current = mine;
          setError(errorMessage(reason));
        });
    };
    const wait = Math.max(0, lastStart.current + minGapMs - Date.now());
    const timer = setTimeout(run, wait);
    return () => clearTimeout(timer);
  }, [load, refresh, manual, minGapMs]);

  const reload = useCallback(() => setManual((n) => n + 1), []);
  return { data, error, reload };
}
