"""What ctx works out about ratified decisions, as opposed to what a person ratified: today the
contradictions between current decisions. It sits between the decision kernel, which asks for them
when it writes a decision, and recall, whose entity index it reads."""
