"""The app's panels, one folder each."""
