// A run's status as a coloured badge.

export function StatusBadge({ status, testId }: { status: string; testId?: string }) {
  return (
    <span className={`status status-${status}`} data-testid={testId}>
      {status}
    </span>
  );
}
