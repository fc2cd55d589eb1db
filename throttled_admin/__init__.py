"""throttled_admin"""
