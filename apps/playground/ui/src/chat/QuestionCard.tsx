// A question the run asks the person (its ask_user call): pick an option or write an answer.

import { type FormEvent, useState } from "react";
import { answerQuestion, errorMessage } from "../api/client";
import type { JsonValue, Question } from "../api/types";
import { ErrorNote } from "../components/ErrorNote";
import { InertText } from "../components/InertText";

export function QuestionCard({ runId, question }: { runId: string; question: Question }) {
  const [text, setText] = useState("");
  const [busy, setBusy] = useState(false);
  const [answered, setAnswered] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);

  const answer = (value: JsonValue, shown: string) => {
    setBusy(true);
    setError(null);
    answerQuestion(runId, question.call_id, value)
      .then(() => setAnswered(shown))
      .catch((reason: unknown) => setError(errorMessage(reason)))
      .finally(() => setBusy(false));
  };
  const onSubmit = (event: FormEvent) => {
    event.preventDefault();
    if (text.trim()) answer(text, text);
  };

  return (
    <div className="card question" data-testid="question-card" data-call-id={question.call_id}>
      <h4>
        <InertText testId="question-text" text={question.question} />
      </h4>
      {answered !== null ? (
        <p className="muted">
          answered: <InertText text={answered} />
        </p>
      ) : question.options.length > 0 ? (
        <div className="action-row">
          {question.options.map((option) => (
            <button key={option} type="button" data-testid="answer-option" disabled={busy} onClick={() => answer(option, option)}>
              <InertText text={option} oneLine />
            </button>
          ))}
        </div>
      ) : (
        <form className="action-row" onSubmit={onSubmit}>
          <input data-testid="answer-input" value={text} onChange={(e) => setText(e.target.value)} placeholder="Your answer" />
          <button type="submit" data-testid="answer-button" disabled={busy || !text.trim()}>
            Answer
          </button>
        </form>
      )}
      <ErrorNote message={error} />
    </div>
  );
}
