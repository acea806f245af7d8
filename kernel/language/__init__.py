"""What ctx reads in text, with no store and no service: the words a keyword query keeps, the
entities a text names, and the stances that make two decisions contradict each other."""
