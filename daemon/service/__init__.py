"""systemd integration: socket activation, sd_notify, unit files, logging."""
