import pytest

from mcpgw.evaluator.errors import JudgeConfigError
from mcpgw.evaluator.judges.prompting import Template, load_template


def test_only_known_placeholders_are_filled():
    template = Template(None, 'Q: {query}\nReply {"verdict": "pass"} or {unknown}', "t")
    (message,) = template.render({"query": "weather?"})
    assert message == {"role": "user", "content": 'Q: weather?\nReply {"verdict": "pass"} or {unknown}'}


def test_file_with_system_part(tmp_path):
    path = tmp_path / "p.txt"
    path.write_text("You are strict.\n---user---\nQuery: {query}\nAnswer: {answer}\n")
    template = load_template(path, {"query", "answer", "reference_answer"})
    system, user = template.render({"query": "q", "answer": "a"})
    assert system == {"role": "system", "content": "You are strict."}
    assert user["content"] == "Query: q\nAnswer: a\n" and template.origin == str(path)


def test_file_without_known_placeholders_is_refused(tmp_path):
    path = tmp_path / "p.txt"
    path.write_text("Grade this: {something_else}")
    with pytest.raises(JudgeConfigError, match="uses none of the placeholders"):
        load_template(path, {"query"})
    with pytest.raises(JudgeConfigError, match="cannot read judge prompt file"):
        load_template(tmp_path / "missing.txt", {"query"})
