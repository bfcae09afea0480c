"""Turn logic that spans turns: what one turn leaves behind for the next."""
