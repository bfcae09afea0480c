"""Understanding: preset intents and their sentence packs, multi-command sentences and
answers from the home's state."""
