"""What every command line of the plugin shares: the output guard (:mod:`.outputs`)."""
