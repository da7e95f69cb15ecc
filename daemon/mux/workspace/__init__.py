"""What a shared server is told of the workspace: registrations, watched files, folders, settings, changes on disk."""
