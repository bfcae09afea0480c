"""Turn logic: one turn from understanding to reply (`turns`), who is listened to
(`listening`: wake phrase, windows, mute) and what one turn leaves behind for the next
(`context`: follow-ups)."""
