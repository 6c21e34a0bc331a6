"""placeholder"""
def normal_form(case, text):
    return None
