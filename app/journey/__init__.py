"""The learner's journey: the syllabus (an ordered path through the cards), the learner's place
on it, and a study plan that covers it by an interview date."""
