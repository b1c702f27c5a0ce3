"""The class quiz: a teacher starts a class, students guess where a head looks, the class sees the answer.

`questions.py` builds a quiz's questions from one translation and the checkpoint's head roles (pure: arrays and
token lists in, `Question`s out); `model_quiz.py` runs the model for it; `store.py` keeps classes, students and
answers in SQLite; `routes.py` serves the JSON API and the two light pages (`quiz.html`, `board.html`) under
`/class/`. No gradio here but `panel.py`: `panel.routes` gives the routes to the app gradio makes at launch.
"""
