"""Exploring one question at a time (the Explore pages' logic, no Streamlit).

  ask_input       Ask: the question typed, spoken (every ASR engine) or translated
  answers         every selected model answers: load, time, score, failures (answer_all)
  variants        Variants: one question perturbed many ways, answered, tabulated
  counterfactual  edit one word of the question or context, compare the answers
  question_match  is a typed question the dataset item's own (then its gold answers score it)
  gallery         striking examples from stored sweeps and Beat-the-AI games
"""
