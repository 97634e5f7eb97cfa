// A failure to show to the person: the server's detail, inert.

import { inert } from "../inert";

export function ErrorNote({ message, testId }: { message: string | null; testId?: string }) {
  if (!message) return null;
  return (
    <p className="error-note" role="alert" data-testid={testId}>
      {inert(message)}
    </p>
  );
}
